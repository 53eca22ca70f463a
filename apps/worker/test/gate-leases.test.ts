/**
 * The per-subscription gate against the real Redis, after an outage or a crash: slots whose holder
 * died, or whose release Redis never got, free themselves when their leases end, and nobody wakes
 * the deliveries parked behind them then. Those deliveries must come back when the leases end, not
 * after the park ceiling of a minute. And a slot given back while the subscription is still over
 * its (lowered) limit wakes nobody, keeps the parked line as it was, and leaves no key without an
 * expiry. No worker runs: the test asks the gate what it answers. The host cap's slots left by dead
 * holders are cleared at the cap, and the key made again keeps an expiry. A slot holds its round's
 * claim: a second run of the round is refused until the first run releases it.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Admission } from '../src/delivery/gate.js';
import { createHostGate, hostCapKeys } from '../src/delivery/host-gate.js';
import { subscriptionGateKeys } from '@webhooks/shared';
import { testGate } from '../../../test/support/delivery-gate.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('gate-leases');
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

const leaseMs = 3_000;
const woken: string[] = [];
// Every delivery over the limit is parked at once, so each answer is the gate's park delay; the
// breaker is out of reach: these slots' leases are the subject, not the callback's failures.
const gate = testGate(redis, prefix, {
  bounds: { base: 10, ceiling: 10 },
  leaseMs,
  async wake(jobId) {
    woken.push(jobId);
  },
});

const admitted = (admission: Admission) => {
  if (!admission.admitted) throw new Error('expected a slot');
  return admission;
};

describe('slots left behind by a worker that died', () => {
  it('hold the deliveries parked behind them no longer than their leases and a turn at the usual pace', async () => {
    const subscriptionId = 'sub-orphaned';
    // The callback answers in 5 ms: that is its average slot time.
    for (let i = 0; i < 5; i++) {
      const admission = admitted(await gate.acquire(subscriptionId, `warm-${i}`));
      await gate.release(subscriptionId, `warm-${i}`, admission, { signal: 'hold', sent: true }, 5);
    }
    // Ten attempts take every slot, and their worker dies: nothing releases them.
    for (let i = 0; i < 10; i++) admitted(await gate.acquire(subscriptionId, `orphan-${i}`));
    // The oldest slot now looks like a callback that began to hang (held over 4 × 5 ms), and its
    // lease has 2 s left: time enough to park the deliveries below on a loaded machine.
    await sleep(1_000);
    const waits: number[] = [];
    for (let i = 0; i < 100; i++) {
      const admission = await gate.acquire(subscriptionId, `parked-${i}`);
      expect(admission.admitted).toBe(false);
      if (!admission.admitted) waits.push(admission.waitMs);
    }
    // The last one has 10 turns of 10 slots ahead: at most the leases' end plus 10 × 5 ms, +10%
    // (taking each turn to last as long as the oldest slot has been held would be 10 s).
    const bound = 1.1 * (leaseMs + 10 * 5);
    expect(Math.max(...waits)).toBeLessThanOrEqual(bound);
    // The first ones are parked for about their turn, well before the leases end.
    expect(waits[0]).toBeLessThan(waits[waits.length - 1]!);
  });
});

describe('a slot given back while the subscription is over its lowered limit', () => {
  it('wakes the delivery parked first only once there is room, and every key keeps an expiry', async () => {
    const subscriptionId = 'sub-lowered';
    const keys = subscriptionGateKeys(prefix, subscriptionId);
    const holders = [];
    for (let i = 0; i < 10; i++) holders.push(admitted(await gate.acquire(subscriptionId, `held-${i}`)));
    expect((await gate.acquire(subscriptionId, 'parked-0')).admitted).toBe(false);

    // A timeout halves the allowance to 5: nine slots are still held, so nobody may go.
    await gate.release(subscriptionId, 'held-0', holders[0]!, { signal: 'decrease', sent: true }, 5);
    expect(woken).toEqual([]);
    for (const key of Object.values(keys)) {
      if ((await redis.exists(key)) === 1) expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
    expect(await redis.pttl(keys.state)).toBeGreaterThan(0);

    for (let i = 1; i <= 4; i++) {
      await gate.release(subscriptionId, `held-${i}`, holders[i]!, { signal: 'hold', sent: true }, 5);
    }
    // Five held, at the limit of 5: still nobody.
    expect(woken).toEqual([]);
    await gate.release(subscriptionId, 'held-5', holders[5]!, { signal: 'hold', sent: true }, 5);
    expect(woken).toEqual(['parked-0']);
  });
});

describe("a host's slots whose holders all died", () => {
  it('are cleared at the cap, and the leases key the next admission makes again keeps an expiry', async () => {
    const hostGate = createHostGate({
      redis,
      prefix,
      maxInFlight: 2,
      leaseMs: 200,
      async wake() {},
      log: pino({ level: 'silent' }),
    });
    const { leases } = hostCapKeys(prefix, 'dead-holders.example');
    expect(await hostGate.acquire('dead-holders.example', 'acct', 'dead-1')).toBe(0);
    expect(await hostGate.acquire('dead-holders.example', 'acct', 'dead-2')).toBe(0);
    await sleep(300);
    expect(await hostGate.acquire('dead-holders.example', 'acct', 'next')).toBe(0);
    expect(await redis.zrange(leases, 0, -1)).toEqual(['acct\tnext']);
    expect(await redis.pttl(leases)).toBeGreaterThan(0);
  });
});

describe("a round's claim, taken with the gate's slot", () => {
  it('refuses a second run of the round until the first releases, and is dropped only by the run that took it', async () => {
    const subscriptionId = 'sub-claimed';
    const first = admitted(await gate.acquire(subscriptionId, 'round-1'));
    const second = await gate.acquire(subscriptionId, 'round-1');
    expect(second).toMatchObject({ admitted: false, claimed: true });
    // Refused as claimed, the second run took no slot and is not parked.
    const keys = subscriptionGateKeys(prefix, subscriptionId);
    expect(await redis.zrange(keys.leases, 0, -1)).toEqual(['round-1']);
    expect(await redis.zcard(keys.parked)).toBe(0);

    // A run whose claim was lost (its lease ended) and taken by another cannot drop the other's.
    await redis.del(`${prefix}:claim:round-1`);
    const third = admitted(await gate.acquire(subscriptionId, 'round-1'));
    await gate.release(subscriptionId, 'round-1', first, null, 5);
    expect((await gate.acquire(subscriptionId, 'round-1')).admitted).toBe(false);

    await gate.release(subscriptionId, 'round-1', third, null, 5);
    const again = admitted(await gate.acquire(subscriptionId, 'round-1'));
    await gate.release(subscriptionId, 'round-1', again, null, 5);
    expect(await redis.exists(`${prefix}:claim:round-1`)).toBe(0);
  });
});

describe('a delivery parked after releases found nobody parked', () => {
  it('is woken by the next release all the same', async () => {
    const subscriptionId = 'sub-parked-again';
    woken.length = 0;
    // Releases with nobody parked: the gate notes that none is, and stops looking.
    for (let i = 0; i < 3; i++) {
      const admission = admitted(await gate.acquire(subscriptionId, `quiet-${i}`));
      await gate.release(subscriptionId, `quiet-${i}`, admission, { signal: 'hold', sent: true }, 5);
    }
    const holders: Array<Extract<Admission, { admitted: true }>> = [];
    for (let i = 0; i < 10; i++) holders.push(admitted(await gate.acquire(subscriptionId, `full-${i}`)));
    expect((await gate.acquire(subscriptionId, 'late')).admitted).toBe(false);
    await gate.release(subscriptionId, 'full-0', holders[0]!, { signal: 'hold', sent: true }, 5);
    expect(woken).toEqual(['late']);
  });
});

describe('a release that raises the in-flight limit', () => {
  it('wakes as many parked deliveries as the new limit has room for, oldest first', async () => {
    const subscriptionId = 'sub-raised';
    const raised: string[] = [];
    const growing = testGate(redis, prefix, {
      bounds: { base: 2, ceiling: 8 },
      leaseMs,
      async wake(jobId) {
        raised.push(jobId);
      },
    });
    const first = admitted(await growing.acquire(subscriptionId, 'first'));
    admitted(await growing.acquire(subscriptionId, 'second'));
    // Each asks from a gate of its own: one gate refuses a subscription it just found full from
    // memory, without parking it in Redis.
    for (let i = 0; i < 4; i++) {
      const asker = testGate(redis, prefix, { bounds: { base: 2, ceiling: 8 }, leaseMs });
      expect((await asker.acquire(subscriptionId, `waiting-${i}`)).admitted).toBe(false);
    }
    // A confirmed attempt in slow start doubles the limit to 4: one slot held, three free.
    await growing.release(subscriptionId, 'first', first, { signal: 'increase', sent: true }, 5);
    expect(raised).toEqual(['waiting-0', 'waiting-1', 'waiting-2']);
    expect(await redis.zrange(subscriptionGateKeys(prefix, subscriptionId).parked, 0, -1)).toEqual([
      'waiting-3',
    ]);
  });
});
