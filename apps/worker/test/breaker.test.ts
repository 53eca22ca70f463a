/**
 * A subscription's circuit breaker in its gate, against the real Redis: it opens after a run of
 * failed attempts and holds every delivery without a slot; once its cool-down ends one probe is
 * admitted while the others wait; a failed probe opens it again for twice as long, a confirmed one
 * closes it, wakes the first delivery held, and starts the in-flight limit again at 1. No worker
 * runs: the test asks the gate what it answers.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { BreakerOptions } from '@webhooks/shared';
import type { Admission } from '../src/delivery/gate.js';
import type { BreakerChange } from '../src/delivery/breaker.js';
import { testGate } from '../../../test/support/delivery-gate.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('breaker');
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

const options: BreakerOptions = {
  failuresInRow: 3,
  failureRate: 0.5,
  minAttempts: 10,
  windowMs: 60_000,
  cooldownMs: 300,
  maxCooldownMs: 10_000,
};
const woken: string[] = [];
const changes: Array<{ subscriptionId: string; change: BreakerChange }> = [];
const gate = testGate(redis, prefix, {
  bounds: { base: 4, ceiling: 4 },
  leaseMs: 5_000,
  async wake(jobId) {
    woken.push(jobId);
  },
  breaker: options,
  async onChange(subscriptionId, change) {
    changes.push({ subscriptionId, change });
  },
});

const admitted = (admission: Admission) => {
  if (!admission.admitted) throw new Error(`expected a slot, told to wait ${admission.waitMs} ms`);
  return admission;
};

/** One attempt of `jobId`: admitted, then ended with `signal` ('increase' is a 200). */
async function attempt(subscriptionId: string, jobId: string, signal: 'increase' | 'hold') {
  const admission = admitted(await gate.acquire(subscriptionId, jobId));
  await gate.release(subscriptionId, jobId, admission, { signal, sent: true }, 5);
  return admission;
}

/** Waits until the breaker's cool-down has passed, asking as a delivery held by it would. */
async function untilProbe(subscriptionId: string, jobId: string) {
  for (;;) {
    const admission = await gate.acquire(subscriptionId, jobId);
    if (admission.admitted) return admission;
    await sleep(Math.min(admission.waitMs, 200));
  }
}

describe('a subscription whose attempts fail', () => {
  it('opens its breaker after the run of failures, holds deliveries, probes once, and closes on a confirmed probe', async () => {
    const sub = 'sub-breaker';
    await attempt(sub, 'a-1', 'hold');
    await attempt(sub, 'a-2', 'hold');
    expect(changes).toEqual([]);
    await attempt(sub, 'a-3', 'hold');
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({
      subscriptionId: sub,
      change: { kind: 'opened', reason: 'consecutive_failures', failuresInRow: 3 },
    });

    // Open: nobody gets a slot, however many are free.
    const held = await gate.acquire(sub, 'b-1');
    expect(held).toMatchObject({ admitted: false, byBreaker: true });

    // The cool-down passed: one probe goes, the others wait for it.
    const probe = await untilProbe(sub, 'b-2');
    expect(probe).toMatchObject({ probe: true, inFlightLimit: 1 });
    expect(await gate.acquire(sub, 'b-3')).toMatchObject({ admitted: false, byBreaker: true });

    // A failed probe opens it again, without a second notice.
    await gate.release(sub, 'b-2', probe, { signal: 'hold', sent: true }, 5);
    expect(changes).toHaveLength(1);
    expect(await gate.acquire(sub, 'b-3')).toMatchObject({ admitted: false, byBreaker: true });

    // The next probe is confirmed: closed, announced, the held deliveries woken, and the
    // subscription starts again at one attempt in flight.
    const second = await untilProbe(sub, 'b-4');
    expect(second.probe).toBe(true);
    expect(await gate.acquire(sub, 'b-5')).toMatchObject({ admitted: false, byBreaker: true });
    await gate.release(sub, 'b-4', second, { signal: 'increase', sent: true }, 5);
    expect(changes).toHaveLength(2);
    expect(changes[1]).toMatchObject({ subscriptionId: sub, change: { kind: 'closed' } });
    const { change: opened } = changes[0]!;
    const { change: closed } = changes[1]!;
    if (opened.kind !== 'opened' || closed.kind !== 'closed') throw new Error('unexpected changes');
    expect(closed.failingSince.getTime()).toBeLessThan(opened.retryAt.getTime());
    // The release wakes the first parked, the close the next one.
    expect(woken).toEqual(expect.arrayContaining(['b-1', 'b-3', 'b-5']));
    const after = await attempt(sub, 'c-1', 'increase');
    expect(after).toMatchObject({ probe: false, inFlightLimit: 1 });
  });

  it('opens on a failure rate over the window, though no run reaches its length', async () => {
    const sub = 'sub-rate';
    for (let i = 0; i < 10; i++) {
      await attempt(sub, `r-${i}`, i % 2 === 1 ? 'hold' : 'increase');
      if (i < 9) expect(changes.filter((c) => c.subscriptionId === sub)).toEqual([]);
    }
    expect(changes.filter((c) => c.subscriptionId === sub)).toMatchObject([
      { change: { kind: 'opened', reason: 'failure_rate', windowAttempts: 10, windowFailures: 5 } },
    ]);
  });

  it('is not opened by attempts that sent nothing (a transformation failed), nor by a run a success broke', async () => {
    const sub = 'sub-mixed';
    for (let i = 0; i < 6; i++) {
      await attempt(sub, `m-${i}`, i % 3 === 2 ? 'increase' : 'hold');
      const admission = admitted(await gate.acquire(sub, `unsent-${i}`));
      await gate.release(
        sub,
        `unsent-${i}`,
        admission,
        i % 2 === 0 ? null : { signal: 'hold', sent: false },
        1,
      );
    }
    expect(changes.filter((c) => c.subscriptionId === sub)).toEqual([]);
    expect(admitted(await gate.acquire(sub, 'm-last')).probe).toBe(false);
  });
});
