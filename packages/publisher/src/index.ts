/**
 * @webhooks/publisher: what an internal service needs to publish events to the webhook service:
 * the catalogue loader, the event publisher, the queues' job shapes and shard rule, and the Redis
 * connections they share with the service. The API and the worker use it too.
 */
export * from './account-id.js';
export * from './batching.js';
export * from './bullmq-layout.js';
export * from './catalogue.js';
export * from './catalogue-file.js';
export * from './closable-cluster.js';
export * from './config-error.js';
export * from './env-list.js';
export * from './event-input.js';
export * from './events-metric.js';
export * from './json-walk.js';
export * from './publisher.js';
export * from './queue-shards.js';
export * from './queues.js';
export * from './redis.js';
export * from './replica-watch.js';
export * from './storable-json.js';
export * from './timestamp.js';
