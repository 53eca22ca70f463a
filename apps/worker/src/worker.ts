/**
 * The delivery worker: a BullMQ worker on `events` (fan-out) and one on `deliveries` (attempts),
 * wired with their PostgreSQL pool, Redis connections and HTTP sender. Any number of worker
 * processes may run against the same Redis and database; BullMQ hands each job to one of them.
 */
import { createRequire } from 'node:module';
import { Job, Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { createPrismaClient, type PrismaClient } from '@webhooks/db';
import {
  createProducerConnection,
  createWorkerConnection,
  queueNames,
  type DeliveryJobData,
  type EventJobData,
} from '@webhooks/shared';
import type { WorkerConfig } from './config.js';
import { createAttemptSender } from './delivery/attempt.js';
import type { DeliveryPolicy } from './delivery/backoff.js';
import { createDeliveryGate } from './delivery/gate.js';
import {
  createDeliveryProcessor,
  deliveryBackoffStrategy,
  type DeliveryJobResult,
} from './delivery/processor.js';
import { createDeliveryStore } from './delivery/store.js';
import { createFanOutProcessor } from './fan-out.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/** The `User-Agent` of every delivery request. */
export const userAgent = `webhook-service/${version} (+https://www.standardwebhooks.com)`;

/** A started worker. */
export interface RunningWorker {
  events: Worker<EventJobData, number>;
  deliveries: Worker<DeliveryJobData, DeliveryJobResult>;
  prisma: PrismaClient;
  /** Stops taking jobs, lets running ones finish, then closes every connection. */
  close(): Promise<void>;
}

/**
 * Starts both processors. The lock of a job outlives the longest attempt (DELIVERY_TIMEOUT_MS plus
 * a margin), so a slow callback is never handed to a second worker while the first still waits on
 * it; a worker that dies loses its lock and BullMQ's stalled-job check gives the job to another.
 */
export function startWorker(config: WorkerConfig, log: Logger): RunningWorker {
  const prisma = createPrismaClient({
    databaseUrl: config.DATABASE_URL,
    poolSize: Math.min(config.WORKER_CONCURRENCY, 20),
  });
  const policy: DeliveryPolicy = {
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    backoffMs: config.DELIVERY_BACKOFF_MS,
  };
  const producer = createProducerConnection(config.REDIS_URL);
  const consumer = createWorkerConnection(config.REDIS_URL);
  for (const connection of [producer, consumer]) {
    connection.on('error', (error) => log.warn({ err: error }, 'redis connection error'));
  }
  const deliveryQueue = new Queue<DeliveryJobData>(queueNames.deliveries, {
    connection: producer,
    prefix: config.QUEUE_PREFIX,
  });
  const sender = createAttemptSender({
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    allowPrivate: config.CALLBACK_ALLOW_PRIVATE,
    maxSockets: config.WORKER_CONCURRENCY,
    userAgent,
    dnsServers: config.dnsServers,
    dnsTimeoutMs: config.DNS_TIMEOUT_MS,
  });
  const lockDuration = config.DELIVERY_TIMEOUT_MS + 5_000;
  const gate = createDeliveryGate({
    redis: producer,
    prefix: config.QUEUE_PREFIX,
    maxInFlight: config.SUBSCRIPTION_MAX_IN_FLIGHT,
    leaseMs: lockDuration,
    // Parked deliveries of a hanging callback come back at most once a minute: cheap however many wait.
    maxParkMs: 60_000,
    async wake(jobId) {
      try {
        await (await Job.fromId(deliveryQueue, jobId))?.promote();
      } catch (error) {
        // Not delayed (it is being parked, or already back): it asks the gate again on its own.
        log.debug({ err: error, jobId }, 'wake-up of a parked delivery skipped');
      }
    },
    log,
  });
  const common = {
    connection: consumer,
    prefix: config.QUEUE_PREFIX,
    concurrency: config.WORKER_CONCURRENCY,
    lockDuration,
    stalledInterval: lockDuration,
    maxStalledCount: 3,
  };

  const events = new Worker<EventJobData, number>(
    queueNames.events,
    createFanOutProcessor({ prisma, deliveries: deliveryQueue, maxAttempts: policy.maxAttempts }),
    common,
  );
  const deliveries = new Worker<DeliveryJobData, DeliveryJobResult>(
    queueNames.deliveries,
    createDeliveryProcessor({
      store: createDeliveryStore(prisma, config.SUBSCRIPTION_DISABLE_AFTER, config.secretBox),
      sender,
      gate,
      policy,
    }),
    { ...common, settings: { backoffStrategy: deliveryBackoffStrategy(policy) } },
  );
  events.on('failed', (job, error) => log.error({ err: error, eventId: job?.id }, 'fan-out failed'));
  deliveries.on('failed', (job, error) =>
    log.debug(
      { jobId: job?.id, attemptsMade: job?.attemptsMade, reason: error.message },
      'delivery attempt failed',
    ),
  );
  for (const worker of [events, deliveries])
    worker.on('error', (error) => log.error({ err: error }, 'worker error'));

  return {
    events,
    deliveries,
    prisma,
    async close() {
      await Promise.all([events.close(), deliveries.close()]);
      await deliveryQueue.close();
      sender.close();
      await prisma.$disconnect();
      producer.disconnect();
      consumer.disconnect();
    },
  };
}
