/**
 * The contract of the account scheduler's scripts against the real Redis, key by key: what
 * scheduling writes, which lane an admission gives a quiet and a backlogged account, the limit, a
 * re-admission after a lease ends, and what confirming releases.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  accountSchedulerKeys,
  createAdmissionScript,
  inlineMark,
  lanes,
  type AdmissionParams,
  type ScheduledEntry,
} from '../src/scheduling/admission-script.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
let prefix: string;
let keys: ReturnType<typeof accountSchedulerKeys>;
let params: AdmissionParams;

beforeEach(() => {
  prefix = newQueuePrefix('admission-script');
  keys = accountSchedulerKeys(prefix);
  params = {
    queueKeys: { wait: `${prefix}:deliveries:wait`, prioritized: `${prefix}:deliveries:prioritized` },
    queueTarget: 20,
    quantum: 3,
    leaseMs: 30_000,
    deliveriesPerSecond: 1_000,
  };
});
afterEach(() => dropPrefix(prefix));
afterAll(() => redis.disconnect());

const entries = (account: string, count: number, inline = false): ScheduledEntry[] =>
  Array.from({ length: count }, (_, i) => ({
    jobId: `${account}-job-${i}`,
    accountId: account,
    entry: `${inline ? inlineMark : ''}${account}\treq-${i}`,
  }));

describe("the account scheduler's scripts", () => {
  it("admit a quiet account's deliveries at once into the front lane, each once, and hold them until confirmed", async () => {
    const script = createAdmissionScript(redis, keys, params);
    const quiet = entries('acct-quiet', 3, true);
    const { admitted, waitingAccounts } = await script.admit(quiet, 20);
    expect(admitted).toEqual(quiet.map(({ jobId, entry }) => ({ jobId, entry, lane: lanes.front })));
    expect(waitingAccounts).toBe(0);
    expect(await redis.hgetall(keys.entries)).toEqual(
      Object.fromEntries(quiet.map((e) => [e.jobId, e.entry])),
    );
    expect(await redis.zcard(keys.admitting)).toBe(3);
    expect(await redis.llen(keys.ring)).toBe(0);
    // Scheduled again (a fan-out run again): held already, not admitted twice.
    expect((await script.admit(quiet, 20)).admitted).toEqual([]);
    await script.confirm(quiet.map(({ jobId }) => jobId));
    expect(await redis.hlen(keys.entries)).toBe(0);
    expect(await redis.zcard(keys.admitting)).toBe(0);
  });

  it("keep a backlogged account's deliveries in its list and admit them into the back lane, a turn's share at a time, within the limit", async () => {
    const script = createAdmissionScript(redis, keys, params);
    const flood = entries('acct-flood', 10);
    const { admitted, waitingAccounts } = await script.admit(flood, 4);
    expect(admitted.map(({ jobId }) => jobId)).toEqual(flood.slice(0, 4).map(({ jobId }) => jobId));
    // More than a turn's share (3) was waiting at both its turns: 10, then 7.
    expect(admitted.map(({ lane }) => lane)).toEqual([lanes.back, lanes.back, lanes.back, lanes.back]);
    expect(waitingAccounts).toBe(1);
    expect(await redis.lrange(keys.accountList('acct-flood'), 0, -1)).toEqual(
      flood.slice(4).map(({ jobId }) => jobId),
    );
    expect(await redis.lrange(keys.ring, 0, -1)).toEqual(['acct-flood']);
  });

  it('admit an entry again, in the stale lane, once its lease ended unconfirmed', async () => {
    const script = createAdmissionScript(redis, keys, { ...params, leaseMs: 1 });
    const [only] = entries('acct-lost', 1);
    const { jobId, entry } = only!;
    expect((await script.admit([only!], 20)).admitted).toEqual([{ jobId, entry, lane: lanes.front }]);
    // Past its lease of 1 ms, never confirmed: its scheduler died before adding the job.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await script.admit([], 20)).admitted).toEqual([{ jobId, entry, lane: lanes.stale }]);
    expect(await redis.hget(keys.entries, jobId)).toBe(entry);
  });
});
