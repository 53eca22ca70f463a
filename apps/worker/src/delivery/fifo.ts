/**
 * Ordered delivery (`ordering: "fifo"`): one event at a time, in acceptance order. The **head**
 * (oldest pending delivery by UUIDv7 event id) is the only one attempted and with a job, through
 * its retries; when it ends the next is handed over (`in-order.ts`) or given its job. A delivery goes
 * only while it is the head in PostgreSQL and no earlier event of its account is being fanned out.
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Pool } from '@webhooks/db';
import { eventJobName, jobNameField, layoutOf, type RedisConnection } from '@webhooks/shared';
import type { ShardedQueues } from '../shard-queues.js';
import { defineFencedDelete, renewalDue } from './lease.js';
import type { Wake } from './wake.js';

/** A FIFO subscription's head: the delivery of `eventId` in `round`. */
export interface FifoHead {
  eventId: string;
  subscriptionId: string;
  accountId: string;
  round: number;
}

/** A worker's hold on a FIFO hand-over: the holder gives each next head its turn; {@link FifoHeads.ensure} adds none. */
export interface HandOverLease {
  /** Renews the lease once a third of it passed ({@link renewalDue}); sooner, nothing. @throws ioredis' errors */
  renew(): Promise<void>;
  /** Lets it go, if still this holder's. Never throws: a lease Redis did not drop ends with its period. */
  release(): Promise<void>;
}

/** Keeps the heads of FIFO subscriptions moving. */
export interface FifoHeads {
  /** Gives each FIFO head of `subscriptionIds` its job if none (a waiting one is woken), unless its hand-over is held. */
  ensure(subscriptionIds: readonly string[]): Promise<void>;
  /**
   * Takes the subscription's hand-over for one lease period, or null when another worker holds it.
   * @throws ioredis' errors
   */
  takeHandOver(subscriptionId: string): Promise<HandOverLease | null>;
}

export interface FifoHeadsOptions {
  pool: Pool;
  /** The heads' jobs go to their subscription's shard, whose prefix the hand-over's key takes. */
  deliveries: Pick<ShardedQueues, 'addDeliveries' | 'ofSubscription'>;
  /** The connection of those queues, which holds the hand-overs. */
  redis: RedisConnection;
  /** DELIVERY_MAX_ATTEMPTS, for the heads' jobs. */
  maxAttempts: number;
  /** How long a hand-over is held without a renewal, in ms: longer than one attempt. */
  leaseMs: number;
  /** Wakes waiting delivery jobs (`wake.ts`). */
  wake: Wake;
}

/** Creates the head keeper. */
export function createFifoHeads(options: FifoHeadsOptions): FifoHeads {
  const { pool, deliveries, redis, maxAttempts, leaseMs } = options;
  const release = defineFencedDelete(redis);
  const handOverKey = (subscriptionId: string) =>
    `${deliveries.ofSubscription(subscriptionId).prefix}:fifo-hand-over:${subscriptionId}`;
  const heads = async (subscriptionIds: readonly string[]): Promise<FifoHead[]> => {
    const { rows } = await pool.query<{
      event_id: string;
      subscription_id: string;
      account_id: string;
      round: number;
    }>({
      name: 'fifo-heads',
      text: `SELECT DISTINCT ON (d.subscription_id) d.event_id::text, d.subscription_id::text, s.account_id, d.round
         FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id AND s.ordering = 'fifo'
         WHERE d.subscription_id = ANY($1::uuid[]) AND d.status = 'pending'
         ORDER BY d.subscription_id, d.event_id`,
      values: [[...new Set(subscriptionIds)]],
    });
    return rows.map((row) => ({
      eventId: row.event_id,
      subscriptionId: row.subscription_id,
      accountId: row.account_id,
      round: row.round,
    }));
  };
  return {
    async ensure(subscriptionIds) {
      const ids = [...new Set(subscriptionIds)];
      if (ids.length === 0) return;
      const held = await Promise.all(ids.map((id) => redis.exists(handOverKey(id))));
      const free = ids.filter((_, i) => held[i] === 0);
      if (free.length === 0) return;
      const rows = await heads(free);
      if (rows.length === 0) return;
      const jobs = await deliveries.addDeliveries(rows, maxAttempts);
      // An id BullMQ holds already keeps its job: one parked while it was not the head goes now.
      const delayed = await Promise.all(jobs.map((job) => job.isDelayed()));
      await options.wake(jobs.filter((_, i) => delayed[i]).map((job) => job.id!));
    },
    async takeHandOver(subscriptionId) {
      const key = handOverKey(subscriptionId);
      const token = randomUUID();
      let renewedAt = Date.now();
      if ((await redis.set(key, token, 'PX', leaseMs, 'NX')) !== 'OK') return null;
      return {
        async renew() {
          const now = Date.now();
          if (!renewalDue(renewedAt, now, leaseMs)) return;
          await redis.pexpire(key, leaseMs);
          renewedAt = now;
        },
        async release() {
          await release({ key }, { token }).catch(() => undefined);
        },
      };
    },
  };
}

/** How many of the oldest waiting and delayed fan-out jobs {@link createFanOutWatch} looks at. */
const watchedWaiting = 100;

/**
 * Whether an earlier event of the account waits for or is in its fan-out: an older job id (UUIDv7) among
 * its shard's active, oldest waiting or first delayed `events` jobs named for the account. Reads names only.
 */
export function createFanOutWatch(redis: RedisConnection, eventsOf: (accountId: string) => Queue) {
  return async (accountId: string, eventId: string): Promise<boolean> => {
    const events = layoutOf(eventsOf(accountId));
    const ids = await redis
      .pipeline()
      .lrange(events.active, 0, -1)
      .lrange(events.wait, -watchedWaiting, -1)
      .zrange(events.delayed, 0, watchedWaiting - 1)
      .exec();
    const earlier = (ids ?? [])
      .flatMap(([error, value]) => {
        if (error) throw error;
        return value as string[];
      })
      .filter((id) => id < eventId);
    if (earlier.length === 0) return false;
    const pipeline = redis.pipeline();
    for (const id of earlier) pipeline.hget(events.job(id), jobNameField);
    const names = (await pipeline.exec()) ?? [];
    const own = eventJobName(accountId);
    return names.some(([error, name]) => {
      if (error) throw error;
      return name === own;
    });
  };
}
