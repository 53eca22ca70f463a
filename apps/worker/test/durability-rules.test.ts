/** The durability rules: the deferral wait, the expiry of a round, and auto-disable. */
import { describe, expect, it } from '@jest/globals';
import { v7 as uuidv7 } from 'uuid';
import { deferralDelayMs, maxDeferralMs } from '../src/deferral.js';
import { applyFailureRun, failureRunChanges, failureRunEffect } from '../src/delivery/auto-disable.js';
import { isExpired, roundStartedAt } from '../src/delivery/expiry.js';

describe('deferralDelayMs', () => {
  it('doubles from 1 s with each deferral and stops growing at 1 minute', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map(deferralDelayMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]);
    expect(deferralDelayMs(10_000)).toBe(maxDeferralMs);
  });
});

describe('the age of a round', () => {
  it('starts at the event’s acceptance (its UUIDv7 time) for the first round, at the job’s creation after', () => {
    const acceptedAt = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const eventId = uuidv7({ msecs: acceptedAt });
    expect(roundStartedAt(eventId, 0, acceptedAt + 99_999)).toBe(acceptedAt);
    expect(roundStartedAt(eventId, 3, acceptedAt + 99_999)).toBe(acceptedAt + 99_999);
  });

  it('expires only once older than the maximum age', () => {
    const maxAgeMs = 3 * 86_400_000;
    expect(isExpired(0, maxAgeMs, maxAgeMs)).toBe(false);
    expect(isExpired(0, maxAgeMs + 1, maxAgeMs)).toBe(true);
  });
});

describe('auto-disable', () => {
  const exhausted = { kind: 'given_up', reason: 'attempts_exhausted' } as const;
  const blocked = { kind: 'given_up', reason: 'blocked_address' } as const;
  const retry = { kind: 'retry', nextAttemptAt: new Date() } as const;
  const succeeded = { kind: 'succeeded' } as const;

  it('counts a delivery given up as a failure, a success as the end of a run, and a retry as nothing', () => {
    expect(failureRunEffect(exhausted, 0)).toBe('extend');
    expect(failureRunEffect(blocked, 0)).toBe('extend');
    expect(failureRunEffect(retry, 3)).toBeNull();
    expect(failureRunEffect(succeeded, 3)).toBe('reset');
    // No run to end: no write.
    expect(failureRunEffect(succeeded, 0)).toBeNull();
  });

  it('folds a batch into one change per subscription: a success ends the run before the failures count', () => {
    expect(
      failureRunChanges([
        { subscriptionId: 'a', effect: 'extend' },
        { subscriptionId: 'b', effect: null },
        { subscriptionId: 'a', effect: 'reset' },
        { subscriptionId: 'a', effect: 'extend' },
        { subscriptionId: 'c', effect: 'extend' },
      ]),
    ).toEqual([
      { subscriptionId: 'a', reset: true, failures: 2 },
      { subscriptionId: 'c', reset: false, failures: 1 },
    ]);
  });

  it('disables when the run reaches the threshold, and only on a failure', () => {
    expect(applyFailureRun(3, { reset: false, failures: 1 }, 5)).toEqual({ run: 4, disable: false });
    expect(applyFailureRun(4, { reset: false, failures: 1 }, 5)).toEqual({ run: 5, disable: true });
    expect(applyFailureRun(4, { reset: true, failures: 1 }, 5)).toEqual({ run: 1, disable: false });
    expect(applyFailureRun(9, { reset: true, failures: 0 }, 5)).toEqual({ run: 0, disable: false });
  });

  it('gives a re-enabled subscription (its run set to 0) the whole threshold again', () => {
    const afterReEnable = 0;
    expect(applyFailureRun(afterReEnable, { reset: false, failures: 4 }, 5).disable).toBe(false);
    expect(applyFailureRun(afterReEnable, { reset: false, failures: 5 }, 5).disable).toBe(true);
  });
});
