/**
 * The backlog bound: `POST /api/events` answers 503 with `Retry-After` once undelivered work passes
 * BACKLOG_MAX_EVENTS or BACKLOG_MAX_DELIVERIES, sampled every {@link backlogSampleMs}. Past the
 * deliveries bound, accounts holding their share are refused; all past {@link hardCeilingFactor}.
 */
import type { FastifyBaseLogger } from 'fastify';
import {
  queueLayout,
  parkedAccountsKey,
  parkedDeliveriesKey,
  queueNames,
  schedulerAccountListKey,
  schedulerAdmittingKey,
  schedulerEntriesKey,
  schedulerRingKey,
  type RedisConnection,
} from '@webhooks/shared';

/** How often the backlog is read, in ms. */
export const backlogSampleMs = 250;

/** What `Retry-After` says when the backlog is full, in seconds. */
export const backlogRetryAfterSeconds = 5;

/** The work waiting: events for their fan-out; deliveries for their turn, a worker or their time. */
export interface Backlog {
  events: number;
  deliveries: number;
  /** Accounts with deliveries waiting for their turn or parked (the larger count), over shards. */
  accounts: number;
  /** Deliveries waiting for their account's turn or parked; one parked for its turn counts twice. */
  waitingOrParked: number;
  /** Age of the oldest event waiting for its fan-out, in ms (0: none waits), the oldest shard's. */
  fanOutWaitMs: number;
}

/** Past this many times BACKLOG_MAX_DELIVERIES, every account is refused, its share or not. */
export const hardCeilingFactor = 2;

/** BACKLOG_MAX_EVENTS and BACKLOG_MAX_DELIVERIES; 0 is no bound. */
export interface BacklogLimits {
  events: number;
  deliveries: number;
}

/** The sentence of a backlog past BACKLOG_MAX_DELIVERIES. */
const deliveriesFull = (backlog: Backlog, limits: BacklogLimits) =>
  `${backlog.deliveries} deliveries are waiting for a worker or a retry, the most this service accepts (BACKLOG_MAX_DELIVERIES ${limits.deliveries})`;

/** Why `backlog` refuses a new event (the problem's detail), or null under both bounds. */
export function backlogRefusal(backlog: Backlog, limits: BacklogLimits): string | null {
  if (limits.events > 0 && backlog.events >= limits.events) {
    return `${backlog.events} events are waiting for their fan-out, the most this service accepts (BACKLOG_MAX_EVENTS ${limits.events})`;
  }
  if (limits.deliveries > 0 && backlog.deliveries >= limits.deliveries) {
    return deliveriesFull(backlog, limits);
  }
  return null;
}

/** Past the deliveries bound, why an account with `waiting` deliveries is refused (its share, the ceiling), or null. */
export function fairShareRefusal(backlog: Backlog, limits: BacklogLimits, waiting: number): string | null {
  if (limits.deliveries === 0 || backlog.deliveries < limits.deliveries) return null;
  const full = deliveriesFull(backlog, limits);
  if (backlog.deliveries >= limits.deliveries * hardCeilingFactor) return full;
  const share = Math.max(1, Math.ceil(backlog.waitingOrParked / Math.max(1, backlog.accounts)));
  return waiting >= share
    ? `${full}, and ${waiting} of them are this account's, over its share of ${share}`
    : null;
}

/** The sampler: why a publish of `accountId` is refused, from the latest sample. */
export interface BacklogWatch {
  refusal(accountId: string): Promise<string | null>;
  /** The latest sample's {@link Backlog.fanOutWaitMs}, for load shedding. */
  fanOutWaitMs(): number;
  close(): void;
}

/**
 * Samples the shards' backlog when a bound is set or `sampleFanOutWait`: `events` jobs and the
 * oldest's age, held and queued deliveries. A failed read keeps the last sample (the publish meets the fault).
 */
export function createBacklogWatch(
  redis: RedisConnection,
  prefixes: readonly string[],
  limits: BacklogLimits,
  log: FastifyBaseLogger,
  sampleFanOutWait: boolean,
): BacklogWatch {
  let latest: Backlog = { events: 0, deliveries: 0, accounts: 0, waitingOrParked: 0, fanOutWaitMs: 0 };
  if (limits.events === 0 && limits.deliveries === 0 && !sampleFanOutWait)
    return { refusal: async () => null, fanOutWaitMs: () => 0, close: () => {} };
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
      .zcard(deliveries.delayed)
      .zcount(parkedAccountsKey(prefix), Date.now(), '+inf')
      .llen(schedulerRingKey(prefix))
      .zcard(schedulerAdmittingKey(prefix))
      // BullMQ pushes a job on the left of `wait` and its workers take from the right.
      .lindex(events.wait, -1)
      .exec();
    const [
      wait,
      prioritized,
      delayed,
      held,
      queued,
      queuedBehind,
      parked,
      parkedAccounts,
      accounts,
      admitting,
    ] = (answers ?? []).map(([error, value]) => {
      if (error) throw error;
      return Number(value);
    });
    const oldest = answers?.[10]?.[1];
    const addedAt =
      typeof oldest === 'string' ? Number(await redis.hget(events.job(oldest), 'timestamp')) : NaN;
    return {
      events: wait! + prioritized! + delayed!,
      deliveries: held! + queued! + queuedBehind! + parked!,
      // An account may be in both: the larger count errs large, refusing fewer.
      accounts: Math.max(accounts!, parkedAccounts!),
      waitingOrParked: Math.max(0, held! - admitting!) + parked!,
      fanOutWaitMs: Number.isFinite(addedAt) ? Math.max(0, Date.now() - addedAt) : 0,
    };
  };
  /** An account's deliveries waiting for its turn or still parked, over every shard. */
  const waitingOf = async (accountId: string) => {
    const now = Date.now();
    const counts = await Promise.all(
      prefixes.flatMap((prefix) => [
        redis.llen(schedulerAccountListKey(prefix, accountId)),
        redis.zcount(parkedDeliveriesKey(prefix, accountId), now, '+inf'),
      ]),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  };
  const sample = async () => {
    const shards = await Promise.all(prefixes.map(sampleShard));
    latest = {
      events: shards.reduce((sum, shard) => sum + shard.events, 0),
      deliveries: shards.reduce((sum, shard) => sum + shard.deliveries, 0),
      accounts: shards.reduce((sum, shard) => sum + shard.accounts, 0),
      waitingOrParked: shards.reduce((sum, shard) => sum + shard.waitingOrParked, 0),
      fanOutWaitMs: Math.max(0, ...shards.map((shard) => shard.fanOutWaitMs)),
    };
  };
  const timer = setInterval(() => {
    sample().catch((error: unknown) => log.debug({ err: error }, 'backlog not sampled'));
  }, backlogSampleMs);
  timer.unref();
  return {
    async refusal(accountId) {
      const overall = backlogRefusal(latest, limits);
      // The events bound is the fan-out's, one queue in arrival order: it refuses every account.
      const eventsFull = limits.events > 0 && latest.events >= limits.events;
      if (overall === null || eventsFull) return overall;
      return fairShareRefusal(latest, limits, await waitingOf(accountId));
    },
    fanOutWaitMs: () => latest.fanOutWaitMs,
    close: () => clearInterval(timer),
  };
}
