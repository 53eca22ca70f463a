/**
 * The host cap's scripts on real Redis: an attempt refused a slot waits to be woken, and a freed
 * slot wakes the waiting attempt of the account holding the fewest slots, oldest first, rather
 * than a flood's next one; a subscription's `rate_limit`, checked in the same step, holds its
 * attempts without taking the host's slots. Asked in a delivery's admission, a host refusing takes
 * nothing of the subscription's either, and one release gives both back.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import pino from 'pino';
import { rateWindowMs } from '../src/delivery/gate-scripts.js';
import { createHostGate, hostCapKeys, type HostGate } from '../src/delivery/host-gate.js';
import { subscriptionGateKeys } from '@webhooks/shared';
import { claimKey } from '../src/delivery/claim.js';
import { testGate } from '../../../test/support/delivery-gate.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const prefix = newQueuePrefix('host-gate');
let redis: Redis;
let gate: HostGate;
const woken: string[] = [];

beforeAll(() => {
  redis = new Redis(testRedisUrl);
  gate = createHostGate({
    redis,
    prefix,
    maxInFlight: 2,
    leaseMs: 30_000,
    wake: async (jobId) => {
      woken.push(jobId);
    },
    log: pino({ level: 'silent' }),
  });
});
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

describe('a slot of a host at its cap', () => {
  it('wakes the waiting attempt of the account holding the fewest slots when it frees', async () => {
    const host = 'hooks.shared.example';
    expect(await gate.acquire(host, 'flood', 'f1')).toBe(0);
    expect(await gate.acquire(host, 'flood', 'f2')).toBe(0);
    // The flood's third attempt waits first, then a quiet account's.
    expect(await gate.acquire(host, 'flood', 'f3')).toBeGreaterThan(0);
    expect(await gate.acquire(host, 'quiet', 'q1')).toBeGreaterThan(0);

    await gate.release(host, 'flood', 'f1');
    expect(woken).toEqual(['q1']);
    expect(await gate.acquire(host, 'quiet', 'q1')).toBe(0);

    await gate.release(host, 'flood', 'f2');
    expect(woken).toEqual(['q1', 'f3']);
    expect(await gate.acquire(host, 'flood', 'f3')).toBe(0);

    // Nobody waits any more: a release wakes nothing, and a slot given back twice frees one.
    await gate.release(host, 'quiet', 'q1');
    await gate.release(host, 'quiet', 'q1');
    expect(woken).toEqual(['q1', 'f3']);
  });
});

describe('a host shared by accounts at their shares', () => {
  it('gives a free slot to an account at its share unless an account below its own waits for it', async () => {
    const host = 'hooks.three.example';
    const three = createHostGate({
      redis,
      prefix,
      maxInFlight: 3,
      leaseMs: 30_000,
      wake: async () => {},
      log: pino({ level: 'silent' }),
    });
    for (const account of ['a', 'b', 'c']) expect(await three.acquire(host, account, `${account}1`)).toBe(0);
    // At the cap, a asks again and is refused while holding its share (one of three).
    expect(await three.acquire(host, 'a', 'a2')).toBeGreaterThan(0);
    await three.release(host, 'b', 'b1');
    // Only a waits, at its share: the freed slot goes to c, at its share too, rather than stay idle.
    expect(await three.acquire(host, 'c', 'c2')).toBe(0);

    // Full again; d, holding nothing, is refused. The next slot freed is d's, not c's.
    expect(await three.acquire(host, 'd', 'd1')).toBeGreaterThan(0);
    await three.release(host, 'c', 'c1');
    expect(await three.acquire(host, 'c', 'c3')).toBeGreaterThan(0);
    expect(await three.acquire(host, 'd', 'd1')).toBe(0);
  });
});

describe('a subscription’s rate_limit, checked with its host’s slot', () => {
  it('refuses the attempt past the window’s count, taking no slot and waking nobody', async () => {
    const host = 'hooks.rated.example';
    const rate = { subscriptionId: 'sub-rated', perSecond: 2 };
    expect(await gate.acquire(host, 'rated', 'r1', rate)).toBe(0);
    expect(await gate.acquire(host, 'rated', 'r2', rate)).toBe(0);
    await gate.release(host, 'rated', 'r1');
    // One slot is free, yet the subscription's second is spent: the third waits for its window.
    const waitMs = await gate.acquire(host, 'rated', 'r3', rate);
    expect(waitMs).toBeGreaterThan(0);
    expect(waitMs).toBeLessThanOrEqual(rateWindowMs);
    const { leases, waiting } = hostCapKeys(prefix, host);
    expect(await redis.zrange(leases, 0, -1)).toEqual(['rated\tr2']);
    expect(await redis.zcard(waiting)).toBe(0);
    // Another subscription's window on the same host is its own.
    expect(await gate.acquire(host, 'rated', 'o1', { subscriptionId: 'sub-other', perSecond: 2 })).toBe(0);
  });
});

describe('a host’s share asked in a delivery’s admission', () => {
  it('refused, takes nothing of the subscription’s, and the release of the holder wakes it', async () => {
    const wokenByGate: string[] = [];
    const admission = testGate(redis, prefix, {
      bounds: { base: 5, ceiling: 10 },
      leaseMs: 30_000,
      hostCap: 1,
      wake: async (jobId) => {
        wokenByGate.push(jobId);
      },
    });
    const host = { hostname: 'hooks.admitted.example', accountId: 'acct' };
    const first = await admission.acquire('sub-first', 'first-1', undefined, host);
    expect(first).toMatchObject({ admitted: true, host: host.hostname });

    const second = await admission.acquire('sub-second', 'second-1', undefined, host);
    expect(second).toMatchObject({ admitted: false, byHost: true });
    const gate = subscriptionGateKeys(prefix, 'sub-second');
    expect(await redis.zcard(gate.leases)).toBe(0);
    expect(await redis.zcard(gate.parked)).toBe(0);
    expect(await redis.exists(claimKey(prefix, 'second-1'))).toBe(0);

    if (!first.admitted) throw new Error('not admitted');
    await admission.release('sub-first', 'first-1', first, { signal: 'increase', sent: true }, 5, host);
    expect(wokenByGate).toEqual(['second-1']);
    expect(await redis.zcard(subscriptionGateKeys(prefix, 'sub-first').leases)).toBe(0);
    expect(await admission.acquire('sub-second', 'second-1', undefined, host)).toMatchObject({
      admitted: true,
    });
  });
});
