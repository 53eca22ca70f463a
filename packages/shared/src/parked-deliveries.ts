/**
 * Notes counting each account's parked deliveries (jobs delayed until a time, noted by the worker
 * or, for a recovery's pace, the API), which the backlog bound counts in the account's share. Entries
 * are scored by due time and stop counting after it, so nothing removes them; a job woken early counts until then.
 */
import type { ChainableCommander } from 'ioredis';
import { parkedAccountsKey, parkedDeliveriesKey } from './scheduler-keys.js';

/** A delivery job of `accountId` parked until `dueAt` (ms since the epoch). */
export interface ParkedJob {
  accountId: string;
  jobId: string;
  dueAt: number;
}

/** Keeps an empty account's set this much longer than its last entry's time, in ms. */
const expiryMarginMs = 60_000;

/**
 * Adds to `pipeline` the notes of `jobs` on `prefix`'s shard: per account, past entries dropped, `jobs`
 * added, the key living until its latest entry and a minute, the account scored with that time (`now` in ms).
 */
export function noteParked(
  pipeline: ChainableCommander,
  prefix: string,
  jobs: readonly ParkedJob[],
  now: number,
): void {
  const byAccount = new Map<string, ParkedJob[]>();
  for (const job of jobs) {
    const parked = byAccount.get(job.accountId);
    if (parked === undefined) byAccount.set(job.accountId, [job]);
    else parked.push(job);
  }
  const accounts = parkedAccountsKey(prefix);
  pipeline.zremrangebyscore(accounts, '-inf', `(${now}`);
  for (const [accountId, parked] of byAccount) {
    const key = parkedDeliveriesKey(prefix, accountId);
    const latest = Math.max(...parked.map((job) => job.dueAt));
    const ttlMs = Math.max(0, latest - now) + expiryMarginMs;
    // The key lives until its latest entry's time: NX sets a first expiry, GT only lengthens it.
    pipeline
      .zremrangebyscore(key, '-inf', `(${now}`)
      .zadd(key, ...parked.flatMap((job) => [job.dueAt, job.jobId]))
      .pexpire(key, ttlMs, 'NX')
      .pexpire(key, ttlMs, 'GT')
      .zadd(accounts, 'GT', latest, accountId);
  }
}
