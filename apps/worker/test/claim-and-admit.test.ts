/**
 * A step's round claim and its subscription's slot, asked together against the real Redis: a run
 * that finds its round claimed by another holds nothing afterwards (the slot it was given is free
 * again for the subscription's next delivery), and a run whose claim Redis could not take gives
 * its slot back too and fails. No worker runs: the test asks what the step would.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { subscriptionGateKeys } from '@webhooks/shared';
import { createAttemptClaims } from '../src/delivery/claim.js';
import { claimAndAdmit } from '../src/delivery/claim-and-admit.js';
import { createDeliveryGate } from '../src/delivery/gate.js';
import { createWorkerMetrics } from '../src/metrics.js';
import { freePort } from '../../../scripts/lib/services.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('claim-and-admit');
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

const log = pino({ level: 'silent' });
const leaseMs = 30_000;
// One attempt in flight per subscription: a slot not given back would hold the next one off.
const gate = createDeliveryGate({
  redis,
  prefix,
  bounds: { base: 1, ceiling: 1 },
  inFlightLimits: true,
  leaseMs,
  maxParkMs: 60_000,
  inSlotWait: { maxMs: 0, maxWaiting: 0 },
  async wake() {},
  log,
  metrics: createWorkerMetrics(),
});
const claims = createAttemptClaims({ redis, prefix, leaseMs, log });

/** The slots of `subscriptionId` held now. */
const slotsHeld = (subscriptionId: string) =>
  redis.zcard(subscriptionGateKeys(prefix, subscriptionId).leases);

describe('the claim and the slot asked together', () => {
  it('hold both for a run whose round is free', async () => {
    const taken = await claimAndAdmit({ claims, gate }, { jobId: 'free', subscriptionId: 'sub-free' }, true);
    expect(taken).toMatchObject({ claimed: true, admission: { admitted: true } });
    expect(await slotsHeld('sub-free')).toBe(1);
    expect(await claims.take('free')).toBe(false);
  });

  it('hold nothing for a run whose round another run holds', async () => {
    expect(await claims.take('second-run')).toBe(true);
    const taken = await claimAndAdmit(
      { claims, gate },
      { jobId: 'second-run', subscriptionId: 'sub-second' },
      true,
    );
    expect(taken).toEqual({ claimed: false });
    expect(await slotsHeld('sub-second')).toBe(0);
    // The subscription's next delivery gets the one slot, and the other run keeps its claim.
    expect(await gate.acquire('sub-second', 'next', true)).toMatchObject({ admitted: true });
    expect(await claims.take('second-run')).toBe(false);
  });

  it('ask only for the claim when the gate is not to be asked', async () => {
    const taken = await claimAndAdmit(
      { claims, gate },
      { jobId: 'in-order', subscriptionId: 'sub-in-order' },
      false,
    );
    expect(taken).toEqual({ claimed: true, admission: null });
    expect(await slotsHeld('sub-in-order')).toBe(0);
  });

  it('give the slot back and fail when Redis could not take the claim', async () => {
    // A connection to a port nothing listens on, given up at its first refusal.
    const unreachable = new Redis(await freePort(), '127.0.0.1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    unreachable.on('error', () => undefined);
    await new Promise((ended) => unreachable.once('end', ended));
    // Ended already: its disconnect would only start a timer that nothing clears.
    const failingClaims = createAttemptClaims({ redis: unreachable, prefix, leaseMs, log });
    await expect(
      claimAndAdmit(
        { claims: failingClaims, gate },
        { jobId: 'no-claim', subscriptionId: 'sub-fault' },
        true,
      ),
    ).rejects.toThrow();
    expect(await slotsHeld('sub-fault')).toBe(0);
    expect(await gate.acquire('sub-fault', 'after', true)).toMatchObject({ admitted: true });
  });
});
