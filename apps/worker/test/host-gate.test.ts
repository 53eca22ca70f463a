/**
 * The host cap's scripts on real Redis: an attempt refused a slot waits to be woken, and a freed
 * slot wakes the waiting attempt of the account holding the fewest slots, oldest first, rather
 * than a flood's next one; a slot kept for the account's next attempt to the host is renewed, and
 * given back when that attempt goes elsewhere.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import pino from 'pino';
import { createHostGate, hostCapKeys, type HostGate } from '../src/delivery/host-gate.js';
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

describe('a slot kept for the next attempt of its account', () => {
  const host = 'hooks.kept.example';
  const leases = () => redis.zrange(hostCapKeys(prefix, host).leases, 0, -1, 'WITHSCORES');

  it('serves that attempt when it goes to the same host, under the member it was taken as', async () => {
    const taken = await gate.slotFor(host, 'ordered', 'head-1', null);
    expect(taken).toMatchObject({ hostname: host, accountId: 'ordered', jobId: 'head-1' });
    expect(await gate.slotFor(host, 'ordered', 'head-2', taken as Exclude<typeof taken, number>)).toBe(taken);
    expect((await leases()).filter((_, i) => i % 2 === 0)).toEqual(['ordered\thead-1']);
  });

  it('is renewed once a third of its lease has passed, and found gone once given back', async () => {
    const slot = await gate.slotFor(host, 'renewed', 'head-1', null);
    if (typeof slot === 'number') throw new Error('no slot');
    // Its lease nearly over, and due for renewal by the clock of the worker that holds it.
    const { leases: key } = hostCapKeys(prefix, host);
    await redis.zadd(key, 'XX', Date.now() + 1_000, 'renewed\thead-1');
    slot.renewedAt -= 20_000;
    expect(await gate.keep(slot)).toBe(true);
    expect(Number(await redis.zscore(key, 'renewed\thead-1'))).toBeGreaterThan(Date.now() + 20_000);

    await gate.release(host, 'renewed', 'head-1');
    slot.renewedAt -= 20_000;
    expect(await gate.keep(slot)).toBe(false);
  });

  it('is given back when the next attempt goes to another host or is another account’s', async () => {
    const other = 'hooks.elsewhere.example';
    const first = await gate.slotFor(host, 'moved', 'head-1', null);
    if (typeof first === 'number') throw new Error('no slot');
    const second = await gate.slotFor(other, 'moved', 'head-2', first);
    expect(second).toMatchObject({ hostname: other, jobId: 'head-2' });
    expect(await redis.zscore(hostCapKeys(prefix, host).leases, 'moved\thead-1')).toBeNull();
    if (typeof second === 'number') throw new Error('no slot');
    const third = await gate.slotFor(other, 'another', 'head-3', second);
    expect(third).toMatchObject({ accountId: 'another', jobId: 'head-3' });
    expect(await redis.zscore(hostCapKeys(prefix, other).leases, 'moved\thead-2')).toBeNull();
  });
});
