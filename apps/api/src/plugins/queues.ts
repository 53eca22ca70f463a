/**
 * Decorates the app with its Redis side: `redis` (a fail-fast producer connection, BullMQ's
 * guidance for producers), `publisher` (events, the same publisher internal services use),
 * `deliveryQueues` (manual redelivery, each subscription's on its queue shard) and
 * `verificationQueue` (callback challenges). All are closed with the app. With tracing on, each carries BullMQ's telemetry, so an event's trace goes
 * on in the worker.
 */
import fp from 'fastify-plugin';
import type {} from '../decorators.js';
import { Queue } from 'bullmq';
import {
  createDeliveryQueues,
  createEventPublisher,
  createProducerConnection,
  queueNames,
  queueTelemetry,
  type QueueShards,
  type RedisConnection,
  type VerificationJobData,
  type RedisTopology,
  type Catalogue,
} from '@webhooks/shared';

export default fp<{
  redis: RedisTopology;
  /** QUEUE_PREFIX as given (the publisher adds the hash tags). */
  queuePrefix: string;
  /** The effective key prefix, of the unsharded queues. */
  prefix: string;
  shards: QueueShards;
  waitReplicas: number;
  tracing: boolean;
  catalogue: Catalogue;
}>(
  async (app, options) => {
    const redis = createProducerConnection(options.redis);
    // ioredis emits connection errors as events; without a listener they would crash the process.
    redis.on('error', (error) => app.log.warn({ err: error }, 'redis connection error'));
    const telemetry = queueTelemetry(options.tracing, 'webhooks-api');
    const traced = telemetry === undefined ? {} : { telemetry };
    const publisher = createEventPublisher({
      ...traced,
      redis,
      catalogue: options.catalogue,
      prefix: options.queuePrefix,
      shards: options.shards.count,
      waitReplicas: options.waitReplicas,
      metrics: { registry: app.metrics, source: 'api' },
    });
    const deliveryQueues = createDeliveryQueues(options.shards, { ...traced, connection: redis });
    for (const queue of deliveryQueues.all)
      queue.on('error', (error) => app.log.warn({ err: error }, 'delivery queue error'));
    const verificationQueue = new Queue<VerificationJobData>(queueNames.verifications, {
      ...traced,
      connection: redis,
      prefix: options.prefix,
    });
    verificationQueue.on('error', (error) => app.log.warn({ err: error }, 'verification queue error'));
    app.decorate<RedisConnection>('redis', redis);
    app.decorate('publisher', publisher);
    app.decorate('deliveryQueues', deliveryQueues);
    app.decorate('verificationQueue', verificationQueue);
    app.addHook('onClose', async () => {
      await Promise.all([publisher.close(), deliveryQueues.close(), verificationQueue.close()]);
      redis.disconnect();
    });
  },
  { name: 'queues', dependencies: ['metrics'] },
);
