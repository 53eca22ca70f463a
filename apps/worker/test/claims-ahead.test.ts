/**
 * A round's claim taken ahead of its step (the ordered hand-over's next head) against the real
 * Redis: while it is held no other run of the round starts; it is held a full lease again only
 * while surely its taker's; and dropping it, or a step's claim, never drops a claim another run
 * took since.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createAttemptClaims } from '../src/delivery/claim.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('claims-ahead');
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

// A third of it (500 ms) is the margin the fresh claim is kept within, on a loaded machine too.
const leaseMs = 1_500;
const claims = createAttemptClaims({ redis, prefix, leaseMs, log: pino({ level: 'silent' }) });

describe('a claim taken ahead', () => {
  it('keeps the round from another run, and is held a full lease again while fresh', async () => {
    const ahead = await claims.takeAhead('fresh');
    expect(ahead).not.toBeNull();
    expect(await claims.take('fresh')).toBe(false);
    expect(await claims.takeAhead('fresh')).toBeNull();
    await sleep(100);
    const renewal = ahead!.keep();
    expect(renewal).not.toBeNull();
    await renewal;
    expect(await redis.pttl(`${prefix}:claim:fresh`)).toBeGreaterThan(leaseMs - 100);
    await claims.drop('fresh');
    expect(await claims.take('fresh')).toBe(true);
  });

  it('is given up, not held again, once a third of its lease has passed', async () => {
    const ahead = await claims.takeAhead('stale');
    await sleep(leaseMs / 3 + 50);
    expect(ahead!.keep()).toBeNull();
    expect(await redis.pttl(`${prefix}:claim:stale`)).toBeLessThan(leaseMs - leaseMs / 3);
    await ahead!.drop();
    expect(await claims.take('stale')).toBe(true);
  });

  it('dropped twice, leaves the claim another run took in between', async () => {
    const ahead = await claims.takeAhead('twice');
    await ahead!.drop();
    expect(await claims.take('twice')).toBe(true);
    await ahead!.drop();
    expect(await claims.take('twice')).toBe(false);
  });

  it('dropped after its lease ended, leaves the claim another run took since', async () => {
    const ahead = await claims.takeAhead('lapsed');
    await sleep(leaseMs + 50);
    expect(await claims.take('lapsed')).toBe(true);
    await ahead!.drop();
    expect(await claims.take('lapsed')).toBe(false);
  });
});

describe("a step's claim", () => {
  it("dropped by a run whose lease ended, leaves the claim another worker's run took since", async () => {
    const other = createAttemptClaims({ redis, prefix, leaseMs, log: pino({ level: 'silent' }) });
    expect(await claims.take('overrun')).toBe(true);
    await sleep(leaseMs + 50);
    expect(await other.take('overrun')).toBe(true);
    await claims.drop('overrun');
    expect(await claims.take('overrun')).toBe(false);
    await other.drop('overrun');
    expect(await claims.take('overrun')).toBe(true);
  });
});
