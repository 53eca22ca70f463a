/**
 * The backlog bound: under an overload, `POST /api/events` answers 503 with `Retry-After` once the
 * work accepted and not yet delivered passes BACKLOG_MAX_EVENTS or BACKLOG_MAX_DELIVERIES, instead
 * of accepting more than the workers can drain and letting Redis grow without bound. The backlog
 * is sampled in the background (every {@link backlogSampleMs}), so a publish pays nothing for it;
 * a bound is therefore approximate, by what one interval accepts.
 */
import type { FastifyBaseLogger } from 'fastify';
import { queueLayout, queueNames, schedulerEntriesKey, type RedisConnection } from '@webhooks/shared';

/** How often the backlog is read, in ms. */
export const backlogSampleMs = 250;

/** What `Retry-After` says when the backlog is full, in seconds. */
export const backlogRetryAfterSeconds = 5;

/** The work waiting: events for their fan-out, first deliveries for their turn or a worker. */
export interface Backlog {
  events: number;
  deliveries: number;
}

/** BACKLOG_MAX_EVENTS and BACKLOG_MAX_DELIVERIES; 0 is no bound. */
export interface BacklogLimits {
  events: number;
  deliveries: number;
}

/**
 * Why `backlog` refuses a new event (a sentence for the problem details), or null when it is
 * under both bounds.
 */
export function backlogRefusal(backlog: Backlog, limits: BacklogLimits): string | null {
  if (limits.events > 0 && backlog.events >= limits.events) {
    return `${backlog.events} events are waiting for their fan-out, the most this service accepts (BACKLOG_MAX_EVENTS ${limits.events})`;
  }
  if (limits.deliveries > 0 && backlog.deliveries >= limits.deliveries) {
    return `${backlog.deliveries} deliveries are waiting for a worker, the most this service accepts (BACKLOG_MAX_DELIVERIES ${limits.deliveries})`;
  }
  return null;
}

/** The sampler: `refusal()` reads the latest sample; `close()` stops sampling. */
export interface BacklogWatch {
  refusal(): string | null;
  close(): void;
}

/**
 * Samples the backlog on `redis`, summed over the queue shards under `prefixes` (their key
 * prefixes): the `events` queue's waiting, prioritized and delayed jobs, and the account
 * scheduler's held deliveries plus the `deliveries` queue's waiting and prioritized jobs (a
 * backlogged account's admitted deliveries are prioritized behind the others). A failed read keeps
 * the last sample (the publish itself then meets the Redis fault and answers 503).
 */
export function createBacklogWatch(
  redis: RedisConnection,
  prefixes: readonly string[],
  limits: BacklogLimits,
  log: FastifyBaseLogger,
): BacklogWatch {
  if (limits.events === 0 && limits.deliveries === 0) return { refusal: () => null, close: () => {} };
  let latest: Backlog = { events: 0, deliveries: 0 };
  // One pipeline per shard: a Cluster runs a pipeline only when its keys share a node.
  const sampleShard = async (prefix: string): Promise<Backlog> => {
    const events = queueLayout(prefix, queueNames.events);
    const deliveries = queueLayout(prefix, queueNames.deliveries);
    const answers = await redis
      .pipeline()
      .llen(events.wait)
      .zcard(events.prioritized)
      .zcard(events.delayed)
      .hlen(schedulerEntriesKey(prefix))
      .llen(deliveries.wait)
      .zcard(deliveries.prioritized)
      .exec();
    const [wait, prioritized, delayed, held, queued, queuedBehind] = (answers ?? []).map(([error, value]) => {
      if (error) throw error;
      return Number(value);
    });
    return { events: wait! + prioritized! + delayed!, deliveries: held! + queued! + queuedBehind! };
  };
  const sample = async () => {
    const shards = await Promise.all(prefixes.map(sampleShard));
    latest = {
      events: shards.reduce((sum, shard) => sum + shard.events, 0),
      deliveries: shards.reduce((sum, shard) => sum + shard.deliveries, 0),
    };
  };
  const timer = setInterval(() => {
    sample().catch((error: unknown) => log.debug({ err: error }, 'backlog not sampled'));
  }, backlogSampleMs);
  timer.unref();
  return { refusal: () => backlogRefusal(latest, limits), close: () => clearInterval(timer) };
}
