/**
 * The notes of parked deliveries (`noteParked`), against the machine's Redis, as the API's backlog
 * bound reads them (`ZCOUNT` from now): each account counts its own jobs still to come, an entry
 * past its time stops counting and is dropped by the next note, an account's key lives until its
 * latest entry's time and a minute (a later note lengthens it, never shortens it), and the shard's
 * accounts are scored with their latest entry's time.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { noteParked, parkedAccountsKey, parkedDeliveriesKey, type ParkedJob } from '../src/index.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('parked');
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

const hourMs = 3_600_000;

/** Notes `jobs` as parked at `now` (ms since the epoch), in one pipeline as the worker sends it. */
async function note(jobs: ParkedJob[], now: number) {
  const pipeline = redis.pipeline();
  noteParked(pipeline, prefix, jobs, now);
  await pipeline.exec();
}

/** What the backlog bound reads at `now`: an account's parked deliveries, and the accounts with some. */
const parkedOf = (accountId: string, now: number) =>
  redis.zcount(parkedDeliveriesKey(prefix, accountId), now, '+inf');
const accountsWithParked = (now: number) => redis.zcount(parkedAccountsKey(prefix), now, '+inf');

describe("an account's parked deliveries", () => {
  it('count per account until their time, and the key lives until the latest of them', async () => {
    const now = Date.now();
    await note(
      [
        { accountId: 'acct-a', jobId: 'a-1', dueAt: now + hourMs },
        { accountId: 'acct-b', jobId: 'b-1', dueAt: now + 5_000 },
        { accountId: 'acct-a', jobId: 'a-2', dueAt: now + 10_000 },
      ],
      now,
    );
    expect([await parkedOf('acct-a', now), await parkedOf('acct-b', now)]).toEqual([2, 1]);
    expect(await accountsWithParked(now)).toBe(2);
    expect(Number(await redis.zscore(parkedAccountsKey(prefix), 'acct-a'))).toBe(now + hourMs);
    // A millisecond before a-1's time, b-1 and a-2 are past: acct-a counts one, acct-b none.
    expect([await parkedOf('acct-a', now + hourMs - 1), await parkedOf('acct-b', now + hourMs - 1)]).toEqual([
      1, 0,
    ]);
    expect(await accountsWithParked(now + 6_000)).toBe(1);
    // An hour and a minute, less the milliseconds this test took.
    const ttl = await redis.pttl(parkedDeliveriesKey(prefix, 'acct-a'));
    expect(ttl).toBeGreaterThan(hourMs);
    expect(ttl).toBeLessThanOrEqual(hourMs + 60_000);

    // A job due sooner does not shorten the key's life.
    await note([{ accountId: 'acct-a', jobId: 'a-3', dueAt: now + 1_000 }], now);
    expect(await redis.pttl(parkedDeliveriesKey(prefix, 'acct-a'))).toBeGreaterThan(hourMs);
    expect(await parkedOf('acct-a', now)).toBe(3);
    // A job due later lengthens it.
    await note([{ accountId: 'acct-a', jobId: 'a-4', dueAt: now + 2 * hourMs }], now);
    expect(await redis.pttl(parkedDeliveriesKey(prefix, 'acct-a'))).toBeGreaterThan(2 * hourMs);
  });

  it('drops the entries past their time when the next job is noted', async () => {
    const now = Date.now();
    await note([{ accountId: 'acct-c', jobId: 'c-1', dueAt: now + 1_000 }], now);
    const later = now + 2 * hourMs;
    await note([{ accountId: 'acct-c', jobId: 'c-2', dueAt: later + 1_000 }], later);
    expect(await redis.zrange(parkedDeliveriesKey(prefix, 'acct-c'), 0, -1)).toEqual(['c-2']);
    // The shard's accounts keep only those with a job still to come at the later note.
    expect(await redis.zrange(parkedAccountsKey(prefix), 0, -1)).toEqual(['acct-c']);
  });
});
