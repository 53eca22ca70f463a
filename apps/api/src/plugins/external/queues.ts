/**
 * The app's Redis side: `redis` (a fail-fast producer), `publisher` (the internal services' one),
 * `deliveryQueues` (per shard), `verificationQueue`, and with REDIS_WAIT_REPLICAS `replicaWatch`
 * (shards lacking replicas, refused at once). Closed with the app; they carry BullMQ's telemetry.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type {} from '../../decorators.js';
import { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import {
  createDeliveryQueues,
  createEventPublisher,
  createProducerConnection,
  layoutOf,
  queueNames,
  queueTelemetry,
  type QueueShards,
  type RedisConnection,
  type VerificationJobData,
  type RedisTopology,
  type Catalogue,
  watchReplicas,
  type ReplicaWatch,
} from '@webhooks/shared';

/** How often the replicas of each shard's master are sampled, in ms. */
const replicaSampleIntervalMs = 1_000;

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
    const deliveryQueues = createDeliveryQueues(options.shards, { ...traced, connection: redis });
    for (const queue of deliveryQueues.all)
      queue.on('error', (error) => app.log.warn({ err: error }, 'delivery queue error'));
    const replicaWatch =
      options.waitReplicas > 0
        ? watchShardReplicas(app, redis, deliveryQueues.all, options.waitReplicas)
        : null;
    const publisher = createEventPublisher({
      ...traced,
      redis,
      catalogue: options.catalogue,
      prefix: options.queuePrefix,
      shards: options.shards.count,
      waitReplicas: options.waitReplicas,
      ...(replicaWatch === null ? {} : { replicaWatch }),
      metrics: { registry: app.metrics, source: 'api' },
    });
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
    app.decorate('replicaWatch', replicaWatch);
    app.addHook('onClose', async () => {
      replicaWatch?.stop();
      await Promise.all([publisher.close(), deliveryQueues.close(), verificationQueue.close()]);
      redis.disconnect();
    });
  },
  { name: 'queues', dependencies: ['metrics'] },
);

/** Watches each shard's master's replicas, logs shards that start or stop refusing, and exposes both as gauges. */
function watchShardReplicas(
  app: FastifyInstance,
  redis: RedisConnection,
  queues: ReadonlyArray<Queue>,
  required: number,
): ReplicaWatch {
  const watch = watchReplicas({
    connection: redis,
    shardKeys: queues.map((queue) => layoutOf(queue).meta),
    required,
    intervalMs: replicaSampleIntervalMs,
    onChange({ shard, replicas }, refusing) {
      if (refusing)
        app.log.error(
          { shard, replicas, required },
          "queue shard refuses publishes: its Redis master has fewer replicas than REDIS_WAIT_REPLICAS; attach one (docs/operations.md, 'A lost Redis replica')",
        );
      else app.log.info({ shard, replicas }, 'queue shard takes publishes again');
    },
  });
  new Gauge({
    name: 'webhook_redis_shard_replicas',
    help: 'Replicas connected to the Redis master of each queue shard (absent when it did not answer)',
    labelNames: ['shard'],
    registers: [app.metrics],
    collect() {
      this.reset();
      for (const { shard, replicas } of watch.current())
        if (replicas !== null) this.set({ shard: String(shard) }, replicas);
    },
  });
  new Gauge({
    name: 'webhook_redis_shard_refusing_publishes',
    help: 'Whether each queue shard refuses publishes (1): its master has fewer replicas than REDIS_WAIT_REPLICAS',
    labelNames: ['shard'],
    registers: [app.metrics],
    collect() {
      for (const { shard } of watch.current())
        this.set({ shard: String(shard) }, watch.refuses(shard) ? 1 : 0);
    },
  });
  return watch;
}
