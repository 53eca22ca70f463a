/**
 * @webhooks/shared: what the API, the worker and internal publishers have in common: the event
 * catalogue, queue names and job data, the wire schemas, configuration loading and the publisher.
 */
export * from '@webhooks/publisher';
export * from './account-overrides.js';
export * from './fair-slots.js';
export * from './callback-policy.js';
export * from './callback-url.js';
export * from './config.js';
export * from './delivery-queues.js';
export * from './client-certificate.js';
export * from './custom-headers.js';
export * from './destination.js';
export * from './aws-destination.js';
export * from './aws-credentials.js';
export * from './relay.js';
export * from './transformation.js';
export * from './transformation-runner.js';
export * from './event-filter.js';
export * from './event-type-selection.js';
export * from './log-ids.js';
export * from './log-redaction.js';
export * from './logger-options.js';
export * from './operator-token.js';
export * from './payload.js';
export * from './parked-deliveries.js';
export * from './secret-box.js';
export * from './secrets-config.js';
export * from './signature.js';
export * from './status-class.js';
export * from './subscription-gate.js';
export * from './throttle.js';
export * from './redis-script.js';
export * from './relay-scripts.js';
export * from './breaker.js';
export * from './edge-sampling.js';
export * from './tracing.js';
export * from './schemas/index.js';
export * from './receiver-auth.js';
export * from './resource-paths.js';
export * from './scheduler-keys.js';
