/**
 * The host cap's scripts on real Redis: an attempt refused a slot waits to be woken, and a freed
 * slot wakes the waiting attempt of the account holding the fewest slots, oldest first, rather
 * than a flood's next one.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import pino from 'pino';
import { createHostGate, type HostGate } from '../src/delivery/host-gate.js';
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
