/**
 * The event publisher for internal services: validates an event against the catalogue and adds it
 * to its account shard's `events` queue, which the worker fans out. Redis only, no database. One
 * shard's publishes within a millisecond go as one `addBulk`; each resolves once its event is queued.
 */
import { createHash } from 'node:crypto';
import { Queue, type Job, type QueueOptions } from 'bullmq';
import pRetry from 'p-retry';
import { v7 as uuidv7 } from 'uuid';
import type { Registry } from 'prom-client';
import { batcher } from './batching.js';
import { layoutOf } from './bullmq-layout.js';
import { eventsPublishedCounter, type EventSource } from './events-metric.js';
import type { Catalogue } from './catalogue.js';
import { checkEventInput, type EventInput } from './event-input.js';
import {
  defaultQueuePrefix,
  eventJob,
  eventJobOptions,
  queueNames,
  type EventJobData,
  type EventJobName,
} from './queues.js';
import { createQueueShards } from './queue-shards.js';
import type { ReplicaWatch } from './replica-watch.js';
import {
  createProducerConnection,
  effectiveKeyPrefix,
  isRedisTopology,
  type RedisConnection,
  type RedisTopology,
} from './redis.js';
import { formatPayloadTimestamp } from './timestamp.js';

/** How long an idempotency key is remembered, in milliseconds (24 hours). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

/** An event accepted by {@link EventPublisher.publish}. */
export interface PublishedEvent {
  /** The event id (UUIDv7): the `webhook-id` header of its deliveries. */
  id: string;
  /** The payload `timestamp`; null for a duplicate whose first event has left the queue already. */
  timestamp: string | null;
  /** True when the idempotency key had been used within 24 hours: nothing new was enqueued. */
  duplicate: boolean;
}

/** How long {@link EventPublisher.publish} waits for Redis by default, in ms. */
export const defaultPublishTimeoutMs = 2000;

/**
 * Redis could not take the event in time, or refused it: not accepted (the API answers 503 with
 * `Retry-After`); retrying with the same idempotency key is safe. `cause`: the ioredis or BullMQ error.
 */
export class PublishUnavailableError extends Error {
  override name = 'PublishUnavailableError';
}

/** Publishes events for delivery. */
export interface EventPublisher<Events extends CatalogueEventMap = AnyCatalogueEvents> {
  /**
   * Validates and enqueues one event. With `Events` (what `pnpm catalogue:types` generates), `type`
   * and `data` are checked at compile time too.
   * @throws EventInputError (400/413) for input the catalogue or the limits refuse; nothing is enqueued.
   * @throws PublishUnavailableError when Redis cannot be reached or does not answer within `timeoutMs`
   */
  publish<Type extends keyof Events & string>(
    input: EventInput & { type: Type; data: Events[Type] },
  ): Promise<PublishedEvent>;
  /**
   * Removes the finished fan-out job of `accountId`'s event `id`, which keeps the event's data (an
   * hour completed, a week failed): for payload expunge. A waiting or running job is left alone.
   * @returns whether a job was removed
   * @throws PublishUnavailableError when Redis cannot be reached within `timeoutMs`
   */
  discardFinished(accountId: string, id: string): Promise<boolean>;
  /** Closes the queue, and the Redis connection when the publisher opened it. */
  close(): Promise<void>;
}

/** `data` by event type, as `pnpm catalogue:types` generates it (an interface: no index signature). */
export type CatalogueEventMap = object;

/** Any type, any object: the publisher's events when no generated map is given. */
export type AnyCatalogueEvents = Record<string, Record<string, unknown>>;

export interface EventPublisherOptions {
  /** A Redis URL or topology (a fail-fast connection is opened), or a `Redis`/`Cluster` the caller owns. */
  redis: string | RedisTopology | RedisConnection;
  /** The event catalogue: `loadCatalogue(EVENT_CATALOGUE)`, the file the services load. */
  catalogue: Catalogue;
  /** BullMQ key prefix, the worker's QUEUE_PREFIX (default `webhooks`; hash-tagged on a Cluster). */
  prefix?: string;
  /** QUEUE_SHARDS; must match the worker's. Default 1. */
  shards?: number;
  /**
   * Replicas that must acknowledge an event before `publish` resolves (Redis `WAIT`,
   * REDIS_WAIT_REPLICAS; default 0). 1 on Sentinel or a Cluster: a failover cannot lose an accepted event.
   */
  waitReplicas?: number;
  /** Longest wait for Redis per publish, in ms (default {@link defaultPublishTimeoutMs}). */
  timeoutMs?: number;
  /** With `waitReplicas`: shards lacking replicas (`watchReplicas`) are refused at once, before `WAIT`. */
  replicaWatch?: Pick<ReplicaWatch, 'refuses'>;
  /**
   * Retries a publish Redis did not take, under the same event id (p-retry: exponential from
   * 200 ms, at most `limit` retries and `maxWaitMs` in all). Off by default: the API answers 503
   * and its client retries; a service publishing from a job or a loop turns it on.
   */
  retry?: { limit: number; maxWaitMs: number };
  /** Where `webhook_events_published_total` counts: registry (default global) and `source` label. */
  metrics?: { registry?: Registry; source?: EventSource };
  /** BullMQ's telemetry (`queueTelemetry`): a span per publish, its context carried to the worker. */
  telemetry?: QueueOptions['telemetry'];
}

/** Creates a publisher; `createEventPublisher<CatalogueEvents>(…)` types `publish` per event type. */
export function createEventPublisher<Events extends CatalogueEventMap = AnyCatalogueEvents>(
  options: EventPublisherOptions,
): EventPublisher<Events> {
  const given = options.redis;
  const connection =
    typeof given === 'string' || isRedisTopology(given) ? createProducerConnection(given) : given;
  const ownsConnection = connection !== given;
  const waitReplicas = options.waitReplicas ?? 0;
  const timeoutMs = options.timeoutMs ?? defaultPublishTimeoutMs;
  const published = eventsPublishedCounter(options.metrics?.registry).labels(
    options.metrics?.source ?? 'publisher',
  );
  // Connection errors reach callers through publish() as PublishUnavailableError; unheard, ioredis
  // and BullMQ would print every reconnection failure.
  if (ownsConnection) connection.on('error', () => {});
  const base = options.prefix ?? defaultQueuePrefix;
  const shards = createQueueShards(base, effectiveKeyPrefix(connection, base), options.shards ?? 1);
  const queues = shards.prefixes.map((prefix) => {
    const queue = new Queue<EventJobData, unknown, EventJobName>(queueNames.events, {
      connection,
      prefix,
      ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
      defaultJobOptions: eventJobOptions,
    });
    queue.on('error', () => {});
    return queue;
  });

  /** The caller's trace context, so each event of a batch keeps its own publisher's trace. */
  const { telemetry } = options;
  const callerContext =
    telemetry === undefined
      ? () => undefined
      : () => telemetry.contextManager.getMetadata(telemetry.contextManager.active());
  type Entry = { data: EventJobData; idempotencyKey: string | undefined; traceMetadata: string | undefined };
  const adders = queues.map((queue) =>
    batcher<Entry, Job<EventJobData>>(async (entries) => {
      const jobs = await queue.addBulk(
        entries.map(({ data, idempotencyKey, traceMetadata }) => {
          const job = eventJob(data);
          return {
            ...job,
            opts: {
              ...job.opts,
              ...(traceMetadata === undefined ? {} : { telemetry: { metadata: traceMetadata } }),
              ...(idempotencyKey === undefined
                ? {}
                : {
                    deduplication: {
                      id: idempotencyId(data.accountId, idempotencyKey),
                      ttl: idempotencyWindowMs,
                    },
                  }),
            },
          };
        }),
      );
      if (waitReplicas > 0) await awaitReplicas(connection, layoutOf(queue).meta, waitReplicas, timeoutMs);
      return jobs;
    }),
  );

  return {
    async publish(input) {
      const occurredAt = checkEventInput(input, options.catalogue);
      const data: EventJobData = {
        id: input.id ?? uuidv7(),
        accountId: input.accountId,
        type: input.type,
        data: input.data,
        timestamp: formatPayloadTimestamp(occurredAt),
        ...(input.requestId === undefined ? {} : { requestId: input.requestId }),
        ...(input.subscriptionId === undefined ? {} : { subscriptionId: input.subscriptionId }),
      };
      const shard = shards.ofAccount(data.accountId);
      const add = async () => {
        if (waitReplicas > 0 && options.replicaWatch?.refuses(shard) === true) {
          throw new PublishUnavailableError(
            `Redis cannot take the event: the master of its queue shard has fewer than ${waitReplicas} replicas (REDIS_WAIT_REPLICAS)`,
          );
        }
        return withRedisTimeout(
          adders[shard]!({ data, idempotencyKey: input.idempotencyKey, traceMetadata: callerContext() }),
          timeoutMs,
        );
      };
      const { retry } = options;
      const job =
        retry === undefined
          ? await add()
          : await pRetry(add, {
              retries: retry.limit,
              maxRetryTime: retry.maxWaitMs,
              minTimeout: 200,
              randomize: true,
              shouldRetry: (error) => error instanceof PublishUnavailableError,
            });
      if (job.id === data.id) {
        published.inc();
        return { id: data.id, timestamp: data.timestamp, duplicate: false };
      }
      const first = job.id === undefined ? undefined : await queues[shard]!.getJob(job.id);
      return { id: job.id ?? data.id, timestamp: first?.data.timestamp ?? null, duplicate: true };
    },
    async discardFinished(accountId, id) {
      const queue = queues[shards.ofAccount(accountId)]!;
      const discard = async () => {
        const job = await queue.getJob(id);
        if (job === undefined || job.data.accountId !== accountId) return false;
        const state = await job.getState();
        if (state !== 'completed' && state !== 'failed') return false;
        await job.remove();
        return true;
      };
      return withRedisTimeout(discard(), timeoutMs, "the event's fan-out job");
    },
    async close() {
      await Promise.all(queues.map((queue) => queue.close()));
      if (ownsConnection) connection.disconnect();
    },
  };
}

/**
 * `pending`, or a {@link PublishUnavailableError} after `ms`: BullMQ waits for a first connection unbounded.
 * A write that timed out may still land, so a retry reuses its idempotency key. The deadline is checked
 * after the turn's I/O (`setImmediate`), so a saturated turn does not refuse an answer already waiting.
 * @param what what is written, for the error message
 */
export async function withRedisTimeout<T>(pending: Promise<T>, ms: number, what = 'the event'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let afterIo: NodeJS.Immediate | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      afterIo = setImmediate(() =>
        reject(new PublishUnavailableError(`Redis did not take ${what} within ${ms} ms`)),
      );
    }, ms);
  });
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    if (error instanceof PublishUnavailableError) throw error;
    throw new PublishUnavailableError(`Redis refused ${what}: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
    clearImmediate(afterIo);
  }
}

/**
 * Waits until `replicas` replicas hold this connection's writes to `key`'s master (Redis `WAIT`),
 * at most `timeoutMs`; on a Cluster `WAIT` rides behind a command on `key` in a pipeline.
 * @throws PublishUnavailableError when fewer acknowledged in time
 */
async function awaitReplicas(connection: RedisConnection, key: string, replicas: number, timeoutMs: number) {
  const answers = await connection.pipeline().exists(key).wait(replicas, timeoutMs).exec();
  const [error, acknowledged] = answers?.[1] ?? [new Error('no answer to WAIT'), 0];
  if (error) throw error;
  if ((acknowledged as number) < replicas) {
    throw new PublishUnavailableError(
      `Redis replicated the event to ${String(acknowledged)} of ${replicas} replicas within ${timeoutMs} ms`,
    );
  }
}

/** Idempotency keys are per account; hashing bounds the Redis key whatever the client sends. */
function idempotencyId(accountId: string, key: string): string {
  return createHash('sha256').update(accountId).update('\0').update(key).digest('hex');
}

/** The SHA-256 of an idempotency key, hex: how a key is stored, bounded whatever the client sends. */
export function idempotencyKeyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
