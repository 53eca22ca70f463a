/**
 * The delivery worker: per consumed shard, BullMQ workers on `events` (fan-out, inline first attempts)
 * and `deliveries` as WORKER_QUEUES says; one on `verifications`, one on `maintenance`. Any number of
 * processes may share Redis and the database: BullMQ hands each job to one.
 */
import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createPgPool, createPrismaClient, type PrismaClient } from '@webhooks/db';
import {
  createProducerConnection,
  createWorkerConnection,
  queueNames,
  queueTelemetry,
  subscriptionOfDeliveryJob,
  finishedJobRetention,
  type DeliveryJobData,
  type EventJobData,
  type MaintenanceJobData,
  type RedisConnection,
} from '@webhooks/shared';
import { suppressedUnlessRecording } from '@webhooks/shared/unsampled-work';
import type { WorkerConfig } from './config.js';
import type { DeliveryPolicy } from './delivery/backoff.js';
import { createInlineAttempts } from './delivery/inline.js';
import type { DeliveryJobResult } from './delivery/processor.js';
import { startDeliveries } from './delivering.js';
import { createFanOutProcessor } from './fan-out.js';
import { createFanOutWatch, createFifoHeads } from './delivery/fifo.js';
import { createWake } from './delivery/wake.js';
import { warnOfRetiredEventTypes } from './retired-event-types.js';
import { createWorkerMetrics } from './metrics.js';
import { createReconciler, type ReconcileReport } from './reconciler.js';
import { keepMaintenanceScheduled, type KeptSchedules } from './maintenance-schedules.js';
import { createShardedQueues } from './shard-queues.js';
import { deleteExpiredRows, type RetentionReport } from './retention.js';
import { createLogPartitions } from './log-partitions.js';
import { startConsumerWatchdog, watchedProcessor, type WatchedConsumer } from './consumer-watchdog.js';

/** Deliveries an account of weight 1 is admitted per turn: small against DELIVERY_QUEUE_TARGET. */
const schedulerQuantum = 10;

/** How often a worker checks that the maintenance schedules are in Redis, at most, in ms. */
const scheduleCheckMs = 10_000;

/** The consumers' connection's name in `CLIENT LIST`; a restarted consumer's own connection has it too. */
export const consumerConnectionName = 'webhooks-worker-consumer';

/** How often retention runs, in ms. */
const retentionIntervalMs = 3_600_000;

/** A started worker. */
export interface RunningWorker {
  /** The fan-out, one per consumed shard; none when WORKER_QUEUES leaves `events` out. */
  events: Array<Worker<EventJobData, number>>;
  /** The attempts, one per consumed shard; none when WORKER_QUEUES leaves `deliveries` out. */
  deliveries: Array<Worker<DeliveryJobData, DeliveryJobResult>>;
  maintenance: Worker<MaintenanceJobData, ReconcileReport | RetentionReport>;
  prisma: PrismaClient;
  /** The producer connection, for readiness checks. */
  redis: RedisConnection;
  /** The process's Prometheus registry. */
  metrics: Registry;
  /** The maintenance schedules this worker keeps in Redis (`missing()` for readiness). */
  schedules: KeptSchedules;
  /** One run of the reconciler, as its scheduler runs it. */
  reconcile(): Promise<ReconcileReport>;
  /** Stops taking jobs, lets running ones finish, then closes every connection. */
  close(): Promise<void>;
}

/**
 * Starts the processors. A job's lock outlives the longest attempt (DELIVERY_TIMEOUT_MS plus a
 * margin), so a slow callback is never handed to a second worker; a dead worker's stalls to another.
 */
export function startWorker(config: WorkerConfig, log: Logger): RunningWorker {
  const pool = createPgPool({
    databaseUrl: config.DATABASE_URL,
    poolSize: Math.min(config.WORKER_CONCURRENCY, 20),
    genericPlans: config.DATABASE_GENERIC_PLANS,
    onIdleError: (error) => log.warn({ err: error }, 'idle PostgreSQL connection lost'),
  });
  warnOfRetiredEventTypes(pool, config.catalogue, log).catch((error: unknown) =>
    log.warn({ err: error }, 'subscriptions naming retired event types could not be checked'),
  );
  // The reconciler, retention and readiness: one statement at a time.
  const prisma = createPrismaClient({ databaseUrl: config.DATABASE_URL, poolSize: 2 });
  const preparePartitions = async () => {
    const { created, failed } = await createLogPartitions(prisma);
    if (created.length > 0) log.info({ days: created }, 'delivery log partitions created');
    for (const { day, reason } of failed)
      log.warn({ day, reason }, 'delivery log partition not created; tried again hourly');
  };
  const policy: DeliveryPolicy = {
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    backoffMs: config.DELIVERY_BACKOFF_MS,
  };
  const producer = createProducerConnection(config.redis);
  const consumer = createWorkerConnection(config.redis, consumerConnectionName);
  for (const connection of [producer, consumer]) {
    connection.on('error', (error) => log.warn({ err: error }, 'redis connection error'));
  }
  // With tracing on, jobs carry the trace context: fan-out and deliveries join the publish's trace.
  const telemetry = queueTelemetry(config.tracing, 'webhooks-worker');
  const traced = telemetry === undefined ? {} : { telemetry };
  const lockDuration = config.DELIVERY_TIMEOUT_MS + 5_000;
  const sharded = createShardedQueues({
    shards: config.shards,
    drain: config.drainShards,
    workerShards: config.workerShards,
    queueOptions: { ...traced, connection: producer },
    maxAttempts: policy.maxAttempts,
    scheduler: {
      redis: producer,
      queueTarget: config.DELIVERY_QUEUE_TARGET,
      quantum: schedulerQuantum,
      leaseMs: lockDuration,
      busyIntervalMs: 5,
      idleIntervalMs: 250,
      deliveriesPerSecond: config.ACCOUNT_DELIVERIES_PER_SECOND,
      overrides: config.accountOverrides,
      log,
    },
  });
  const maintenanceQueue = new Queue<MaintenanceJobData>(queueNames.maintenance, {
    ...traced,
    connection: producer,
    prefix: config.keyPrefix,
  });
  const metrics = createWorkerMetrics();
  const common = {
    ...traced,
    connection: consumer,
    concurrency: config.WORKER_CONCURRENCY,
    lockDuration,
    stalledInterval: lockDuration,
    maxStalledCount: 3,
  };
  const stopSampling = metrics.sampleQueues(sharded.all, async () => {
    const { rows } = await pool.query<{ status: string; count: number }>(
      'SELECT status::text, count(*)::int AS count FROM subscriptions GROUP BY status',
    );
    return rows;
  });
  // A waiting delivery is a delayed job of its subscription's shard (a challenge's id names none: it asks again).
  const wake = createWake({
    queueOf(jobId) {
      const subscriptionId = subscriptionOfDeliveryJob(jobId);
      return subscriptionId === null ? null : sharded.ofSubscription(subscriptionId).deliveries;
    },
    log,
  });
  const fifoHeads = createFifoHeads({
    pool,
    deliveries: sharded,
    redis: producer,
    maxAttempts: policy.maxAttempts,
    leaseMs: lockDuration,
    wake,
  });
  const fifo = {
    heads: fifoHeads,
    earlierFanOut: createFanOutWatch(producer, (accountId) => sharded.ofAccount(accountId).events),
  };
  const delivering = config.roles.has('deliveries')
    ? startDeliveries(config, {
        pool,
        producer,
        sharded,
        policy,
        lockDuration,
        common,
        log,
        metrics,
        fifo,
        wake,
      })
    : null;
  const deliveries = delivering?.consumers.map((consumer) => consumer.first) ?? [];
  // One budget of inline attempts for the fan-out's and the scheduler's background admission's.
  const inline =
    delivering !== null
      ? createInlineAttempts({
          deliverFor: (subscriptionId) =>
            delivering.deliverFor(sharded.ofSubscription(subscriptionId).prefix),
          maxAttempts: policy.maxAttempts,
          deadlineMs: config.DELIVERY_INLINE_DEADLINE_MS,
          maxInFlight: config.WORKER_CONCURRENCY,
          log,
          metrics,
        })
      : undefined;
  if (inline !== undefined) sharded.attemptWith(inline);
  for (const shard of sharded.consumed)
    shard.scheduler
      .start()
      .catch((error: unknown) =>
        log.error({ err: error, shard: shard.label }, 'account scheduler did not start'),
      );
  const fanOut = createFanOutProcessor({
    pool,
    secretBox: config.secretBox,
    catalogue: config.catalogue,
    scheduler: sharded,
    fifoHeads,
    log,
  });
  const fanOutActivity = sharded.consumed.map(() => ({ running: 0, lastStartedMs: Date.now() }));
  /** A new fan-out Worker on shard `i`, on `connection` (the watchdog starts another if it wedges). */
  const startEvents = (i: number, connection: RedisConnection = consumer) => {
    const processor = watchedProcessor(fanOut, fanOutActivity[i]!);
    return new Worker<EventJobData, number>(
      queueNames.events,
      config.tracing ? suppressedUnlessRecording(processor) : processor,
      { ...common, connection, prefix: sharded.consumed[i]!.prefix },
    );
  };
  const events = config.roles.has('events') ? sharded.consumed.map((_, i) => startEvents(i)) : [];
  const reconcile = createReconciler({
    prisma,
    redis: producer,
    shards: sharded.all,
    addDeliveries: sharded.addDeliveries,
    addNotices: sharded.addNotices,
    maxAttempts: policy.maxAttempts,
    graceMs: config.RECONCILE_GRACE_MS,
    relay: { prefix: config.keyPrefix, abandonedMs: config.LISTEN_ABANDONED_MS },
    log,
    metrics,
  });
  const maintenance = new Worker<MaintenanceJobData, ReconcileReport | RetentionReport>(
    queueNames.maintenance,
    async (job) => {
      if (job.data.task === 'reconcile') return reconcile();
      await preparePartitions();
      const report = await deleteExpiredRows(prisma, { retentionDays: config.RETENTION_DAYS });
      log.info(report, 'retention: rows deleted');
      return report;
    },
    // The delivery workers' lock: a maintenance job a Redis restart left active is taken back as soon,
    // not after BullMQ's default 30 s + 30 s, which would hold up the scheduler's next run.
    {
      connection: consumer,
      prefix: config.keyPrefix,
      concurrency: 1,
      lockDuration,
      stalledInterval: lockDuration,
    },
  );
  const schedules = keepMaintenanceScheduled({
    queue: maintenanceQueue,
    connection: producer,
    schedules: [
      { task: 'reconcile', every: config.RECONCILE_INTERVAL_MS },
      { task: 'retention', every: retentionIntervalMs },
    ],
    checkMs: Math.min(config.RECONCILE_INTERVAL_MS, scheduleCheckMs),
    retention: finishedJobRetention,
    log,
    restored: metrics.schedulesRestored,
  });
  const observeEvents = (worker: Worker<EventJobData, number>) =>
    worker
      .on('failed', (job, error) => log.error({ err: error, eventId: job?.id }, 'fan-out failed'))
      .on('error', (error) => log.error({ err: error }, 'worker error'));
  const observeDeliveries = (worker: Worker<DeliveryJobData, DeliveryJobResult>) =>
    worker
      .on('failed', (job, error) =>
        log.debug(
          { jobId: job?.id, attemptsMade: job?.attemptsMade, reason: error.message },
          'delivery attempt failed',
        ),
      )
      .on('error', (error) => log.error({ err: error }, 'worker error'));
  events.forEach(observeEvents);
  deliveries.forEach(observeDeliveries);
  maintenance.on('failed', (job, error) =>
    log.error({ err: error, task: job?.data.task }, 'maintenance task failed'),
  );
  maintenance.on('error', (error) => log.error({ err: error }, 'worker error'));
  // A restarted consumer takes its place in `events` or `deliveries`, which the health check reads,
  // on a connection of its own: the shared one may be what wedged.
  // One a consumer at most: a consumer restarted again lets its previous one go once that Worker closed.
  const ownConnections = new Map<string, RedisConnection>();
  const restartOn = <W extends Worker>(
    key: string,
    previous: W,
    start: (connection: RedisConnection) => W,
  ) => {
    const connection = createWorkerConnection(config.redis, consumerConnectionName);
    connection.on('error', (error) => log.warn({ err: error }, 'redis connection error'));
    const before = ownConnections.get(key);
    ownConnections.set(key, connection);
    if (before !== undefined) void previous.close().finally(() => before.disconnect());
    return start(connection);
  };
  const watched: WatchedConsumer[] = [
    ...events.map((_, i) => ({
      queue: queueNames.events,
      shard: sharded.consumed[i]!.label,
      counts: sharded.consumed[i]!.events,
      activity: fanOutActivity[i]!,
      concurrency: config.WORKER_CONCURRENCY,
      current: () => events[i]!,
      restart: () =>
        (events[i] = restartOn(`events ${i}`, events[i]!, (connection) =>
          observeEvents(startEvents(i, connection)),
        )),
    })),
    ...(delivering?.consumers ?? []).map((consumer, i) => ({
      queue: queueNames.deliveries,
      shard: consumer.shard.label,
      counts: consumer.shard.deliveries,
      activity: consumer.activity,
      concurrency: config.WORKER_CONCURRENCY,
      current: () => deliveries[i]!,
      restart: () =>
        (deliveries[i] = restartOn(`deliveries ${i}`, deliveries[i]!, (connection) =>
          observeDeliveries(consumer.start(connection)),
        )),
    })),
  ];
  const stopWatchdog =
    config.WORKER_WATCHDOG_MS > 0
      ? startConsumerWatchdog({
          consumers: watched,
          boundMs: config.WORKER_WATCHDOG_MS,
          restarts: metrics.consumerRestarts,
          log,
        })
      : async () => {};

  return {
    events,
    deliveries,
    maintenance,
    prisma,
    redis: producer,
    metrics: metrics.registry,
    reconcile,
    schedules,
    async close() {
      await stopWatchdog();
      stopSampling();
      schedules.stop();
      await Promise.all([
        ...events.map((worker) => worker.close()),
        ...deliveries.map((worker) => worker.close()),
        delivering?.verifications.close(),
        maintenance.close(),
      ]);
      await sharded.close();
      await maintenanceQueue.close();
      delivering?.close();
      await Promise.all([prisma.$disconnect(), pool.end()]);
      producer.disconnect();
      consumer.disconnect();
      for (const connection of ownConnections.values()) connection.disconnect();
    },
  };
}
