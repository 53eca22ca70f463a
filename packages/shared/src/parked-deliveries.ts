/**
 * The notes that count each account's parked deliveries: delivery jobs waiting in a shard's delayed
 * set until a time (a retry's backoff; a gate, rate limit, host cap or FIFO wait, noted by the
 * worker; a recovery's pace, noted by the API), kept per account in {@link parkedDeliveriesKey} and
 * {@link parkedAccountsKey}, so that the API's backlog bound counts them in the account's share.
 *
 * Each entry is scored with the time its job is due; an entry past it no longer counts, so nothing
 * has to remove it when the job runs, is woken early or is removed with its subscription. The count
 * is approximate in that one way: a job woken before its time counts until that time.
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
 * Adds to `pipeline` the notes of `jobs`, parked on the shard whose effective key prefix is
 * `prefix` (all keys in that shard's slot on a Cluster): per account, its entries past their time
 * dropped and `jobs`' added, its key living until its latest entry's time and a minute; the
 * account scored in the shard's accounts with that time. `now` is in ms since the epoch.
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
