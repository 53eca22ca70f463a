/**
 * The count of each account's parked deliveries: the delivery jobs that wait in a shard's delayed
 * set after a step (a retry's backoff; a gate, rate limit, host cap or FIFO wait), kept per account
 * in `parkedDeliveriesKey` (and the accounts that have some in `parkedAccountsKey`), so that the
 * API's backlog bound counts them in the account's share
 * (`apps/api/src/lib/backlog.ts`). A job waiting for its account's turn is in its account's list
 * already and is not counted twice.
 *
 * Each entry is scored with the time its job is due; an entry past it no longer counts, so nothing
 * has to remove it when the job runs, is woken early or is removed with its subscription. The count
 * is approximate in that one way: a job woken before its time counts until that time.
 */
import type { Logger } from 'pino';
import { parkedAccountsKey, parkedDeliveriesKey, type RedisConnection } from '@webhooks/shared';
import type { DeliveryStep } from './step.js';

/**
 * When the job of a step that came to `step` is due again, in ms since the epoch, or null when it
 * is not parked: the round ended, the attempt confirmed or gave up, or the job waits in its
 * account's turn list.
 *
 * @param now the time the step ended, in ms since the epoch
 */
export function parkedUntil(step: DeliveryStep, now: number): number | null {
  if (step.kind === 'wait') return step.inTurnList === true ? null : now + step.waitMs;
  if (step.kind === 'attempted' && step.outcome.kind === 'retry') return step.outcome.nextAttemptAt.getTime();
  return null;
}

/** Notes the parked deliveries of one queue shard. */
export interface ParkedDeliveries {
  /**
   * Notes that `accountId`'s job `jobId` waits until `dueAt` (ms since the epoch), and drops the
   * account's entries already past their time. Never throws: a note Redis did not take is logged,
   * and only leaves the count lower until the next one.
   */
  park(accountId: string, jobId: string, dueAt: number): Promise<void>;
}

/** Options of {@link createParkedDeliveries}. */
export interface ParkedDeliveriesOptions {
  redis: RedisConnection;
  /** The shard's effective key prefix. */
  prefix: string;
  log: Logger;
}

/** Keeps an empty account's set this much longer than its last entry's time, in ms. */
const expiryMarginMs = 60_000;

/**
 * Creates the notes of one shard: per parked job, one pipeline on the account's key and one
 * command on the shard's accounts (both in the shard's slot on a Cluster).
 */
export function createParkedDeliveries(options: ParkedDeliveriesOptions): ParkedDeliveries {
  const { redis, prefix, log } = options;
  return {
    async park(accountId, jobId, dueAt) {
      const key = parkedDeliveriesKey(prefix, accountId);
      const accounts = parkedAccountsKey(prefix);
      const now = Date.now();
      const ttlMs = Math.max(0, dueAt - now) + expiryMarginMs;
      try {
        // The key lives until its latest entry's time: NX sets a first expiry, GT only lengthens it.
        await redis
          .pipeline()
          .zremrangebyscore(key, '-inf', `(${now}`)
          .zadd(key, dueAt, jobId)
          .pexpire(key, ttlMs, 'NX')
          .pexpire(key, ttlMs, 'GT')
          .zremrangebyscore(accounts, '-inf', `(${now}`)
          .zadd(accounts, 'GT', dueAt, accountId)
          .exec();
      } catch (error) {
        log.debug({ err: error, jobId }, 'parked delivery not counted');
      }
    },
  };
}
