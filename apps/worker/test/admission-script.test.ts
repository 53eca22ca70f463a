/**
 * The contract of the account scheduler's scripts against the real Redis, key by key: what
 * scheduling writes, which lane an admission gives a quiet and a backlogged account, the limit, a
 * re-admission after a lease ends, what confirming releases, and the turn of a retry, which the
 * subscription gate's admission takes.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  accountSchedulerKeys,
  createAdmissionScript,
  heldMark,
  inlineMark,
  lanes,
  type AdmissionParams,
  type ScheduledEntry,
} from '../src/scheduling/admission-script.js';
import { testGate } from '../../../test/support/delivery-gate.js';
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

/**
 * The turn of a retry, as the subscription gate's admission takes it with its slot (each job on a
 * subscription of its own, so that only the turn can hold it): true when the job runs now (its
 * slot is given back at once), false when it is held for its account's turn.
 */
const turnsOf = (deliveriesPerSecond: number) => {
  const gate = testGate(redis, prefix, {
    bounds: { base: 10, ceiling: 10 },
    leaseMs: 30_000,
    deliveriesPerSecond,
  });
  return async (job: { jobId: string; accountId: string; requestId?: string }) => {
    const { jobId, ...turn } = job;
    const admission = await gate.acquire(`sub-${jobId}`, jobId, turn);
    if (!admission.admitted) {
      expect(admission).toMatchObject({ inTurnList: true });
      return false;
    }
    await gate.release(`sub-${jobId}`, jobId, admission, null, 0);
    return true;
  };
};

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

  it("let a retry run at once for an account with nothing waiting, and hold one behind its account's waiting work until the round robin grants its turn", async () => {
    const script = { ...createAdmissionScript(redis, keys, params), turn: turnsOf(1_000) };
    // Nothing waiting for acct-quiet: its retry runs now (the token it takes is the next test's).
    expect(await script.turn({ jobId: 'quiet-retry', accountId: 'acct-quiet' })).toBe(true);
    expect(await redis.hexists(keys.entries, 'quiet-retry')).toBe(0);

    // acct-flood has 10 first deliveries waiting: its retry is held behind them.
    const flood = entries('acct-flood', 10);
    await script.admit(flood, 0);
    const retry = { jobId: 'flood-retry', accountId: 'acct-flood', requestId: 'req-r' };
    expect(await script.turn(retry)).toBe(false);
    expect(await redis.hget(keys.entries, 'flood-retry')).toBe(`${heldMark}acct-flood\treq-r`);
    expect(await redis.lrange(keys.accountList('acct-flood'), -1, -1)).toEqual(['flood-retry']);
    // Asking again (its park ended before its turn): still held, once.
    expect(await script.turn(retry)).toBe(false);
    expect(await redis.llen(keys.accountList('acct-flood'))).toBe(11);

    // Admitted after the account's earlier work, and granted: the job's next run takes its turn.
    const { admitted } = await script.admit([], 20);
    expect(admitted.map(({ jobId }) => jobId)).toEqual([...flood.map(({ jobId }) => jobId), 'flood-retry']);
    expect(await redis.zscore(keys.granted, 'flood-retry')).not.toBeNull();
    await script.confirm(admitted.map(({ jobId }) => jobId));
    expect(await script.turn(retry)).toBe(true);
    expect(await redis.zscore(keys.granted, 'flood-retry')).toBeNull();
  });

  it('hold a retry of an account out of quota, though nothing of it waits', async () => {
    const script = { turn: turnsOf(2) };
    const turns = [];
    for (let i = 0; i < 3; i++) turns.push(await script.turn({ jobId: `retry-${i}`, accountId: 'acct-a' }));
    expect(turns).toEqual([true, true, false]);
    expect(await redis.lrange(keys.accountList('acct-a'), 0, -1)).toEqual(['retry-2']);
    expect(await redis.lrange(keys.ring, 0, -1)).toEqual(['acct-a']);
  });
});
