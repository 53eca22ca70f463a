/** Unit tests of the adaptive in-flight allowance (AIMD). */
import { describe, expect, it } from '@jest/globals';
import {
  entersThrottling,
  averageDurationMs,
  congestionSignal,
  inFlightLimit,
  minParkMs,
  nextAllowance,
  nextThreshold,
  slowStartSlotMs,
  slowStartThreshold,
  isSlowing,
  slowingMarginMs,
  parkDelayMs,
  turnMs,
  throttleState,
} from '../src/throttle.js';

const max = 10;

describe('congestionSignal', () => {
  it('raises on a confirmed attempt and lowers on a timeout or a failed connection', () => {
    expect(congestionSignal({ statusCode: 200, errorClass: null })).toBe('increase');
    expect(congestionSignal({ statusCode: null, errorClass: null })).toBe('increase');
    for (const errorClass of ['timeout', 'connection_refused', 'connection_reset', 'dns'])
      expect(congestionSignal({ statusCode: null, errorClass })).toBe('decrease');
  });

  it('leaves the allowance alone for answers that say nothing about capacity', () => {
    expect(congestionSignal({ statusCode: 500, errorClass: 'http_status' })).toBe('hold');
    expect(congestionSignal({ statusCode: 429, errorClass: 'http_status' })).toBe('hold');
    expect(congestionSignal({ statusCode: null, errorClass: 'blocked_address' })).toBe('hold');
  });
});

describe('nextAllowance', () => {
  const bounds = { base: max, ceiling: 40 };

  it('halves on congestion, down to 1', () => {
    const drops = [10];
    while (drops.at(-1)! > 1) drops.push(nextAllowance(drops.at(-1)!, 'decrease', bounds));
    expect(drops).toEqual([10, 5, 2, 1]);
    expect(nextAllowance(1, 'decrease', bounds)).toBe(1);
    expect(nextAllowance(33, 'decrease', bounds)).toBe(16);
  });

  // The gate applies one change per window (compare-and-set on the allowance admitted under), so
  // each step below is one window of successes.
  it('climbs back by one per window of successes, to the base whatever the pace', () => {
    let allowance = 1;
    let windows = 0;
    while (allowance < max) {
      allowance = nextAllowance(allowance, 'increase', bounds, true);
      windows++;
    }
    expect(allowance).toBe(max);
    expect(windows).toBe(max - 1);
    expect(nextAllowance(4.5, 'increase', bounds, true)).toBe(5.5);
  });

  it('doubles past the base up to the ceiling while the callback keeps its pace and has never been cut back (slow start)', () => {
    const path = [max];
    while (path.at(-1)! < bounds.ceiling) path.push(nextAllowance(path.at(-1)!, 'increase', bounds));
    expect(path).toEqual([10, 20, 40]);
    expect(nextAllowance(bounds.ceiling, 'increase', bounds)).toBe(bounds.ceiling);
    expect(nextAllowance(max, 'increase', bounds, true)).toBe(max);
  });

  it('earns one a window past its slow-start threshold, up to the ceiling', () => {
    let allowance = max;
    let windows = 0;
    while (allowance < bounds.ceiling) {
      allowance = nextAllowance(allowance, 'increase', bounds, false, max);
      windows++;
    }
    expect(allowance).toBe(bounds.ceiling);
    expect(windows).toBe(bounds.ceiling - max);
    // Doubling stops at the threshold, then one a window.
    expect(nextAllowance(12, 'increase', bounds, false, 20)).toBe(20);
    expect(nextAllowance(20, 'increase', bounds, false, 20)).toBe(21);
  });

  it('halves above the base when the callback slows down or answers other than 200, never below the base', () => {
    expect(nextAllowance(36, 'increase', bounds, true)).toBe(18);
    expect(nextAllowance(36, 'hold', bounds)).toBe(18);
    expect(nextAllowance(14, 'hold', bounds)).toBe(max);
  });

  it('holds at or below the base on an answer other than 200', () => {
    expect(nextAllowance(3.5, 'hold', bounds)).toBe(3.5);
    expect(nextAllowance(max, 'hold', bounds)).toBe(max);
  });
});

describe('isSlowing', () => {
  it('is an attempt that held its slot over twice the average, by more than the margin', () => {
    expect(isSlowing(199, 100)).toBe(false);
    expect(isSlowing(401, 200)).toBe(true);
    expect(isSlowing(301, 200)).toBe(false);
    expect(isSlowing(400, 200)).toBe(false);
    expect(isSlowing(200 + slowingMarginMs + 1, 100)).toBe(true);
    // A fast callback's jitter: 4 ms against an average of 1.
    expect(isSlowing(4, 1)).toBe(false);
    expect(isSlowing(5_000, null)).toBe(false);
  });
});

describe('inFlightLimit and throttleState', () => {
  it('is the integer part of the allowance, throttled below the maximum', () => {
    expect(inFlightLimit(3.9, max)).toBe(3);
    expect(throttleState(3.9, max)).toBe('throttled');
    expect(inFlightLimit(10, max)).toBe(10);
    expect(throttleState(10, max)).toBe('healthy');
  });
});

describe('parkDelayMs', () => {
  /** A subscription whose slots were all taken a moment ago (leases of 35 s). */
  const view = (parked: number, limit: number, averageMs: number | null, oldestHeldMs = 0) => ({
    parked,
    limit,
    averageMs,
    oldestHeldMs,
    leaseMs: 35_000,
  });

  it('waits about the turn of the deliveries ahead: place in line / limit × slot time', () => {
    expect(parkDelayMs(view(19, 10, 100), 60_000, 0.5)).toBe(200);
    expect(parkDelayMs(view(0, 1, 10_000), 60_000, 0.5)).toBe(10_000);
  });

  it('stays between the floor and the ceiling, spread by ±10%', () => {
    expect(parkDelayMs(view(0, 10, 1), 60_000, 0.5)).toBe(minParkMs);
    expect(parkDelayMs(view(5_000, 1, 10_000), 60_000, 0.5)).toBe(60_000);
    expect(parkDelayMs(view(19, 10, 100), 60_000, 0)).toBe(180);
    expect(parkDelayMs(view(19, 10, 100), 60_000, 0.999)).toBe(220);
  });

  it('takes a slot held over 4 times the average as the turn: a callback that began to hang', () => {
    expect(turnMs(view(0, 10, 100, 401))).toBe(401);
    expect(turnMs(view(0, 10, 100, 400))).toBe(100);
    expect(turnMs(view(0, 10, null, 5_000))).toBeNull();
    expect(parkDelayMs(view(19, 10, 100, 2_000), 60_000, 0.5)).toBe(4_000);
  });

  it('never waits past the end of the oldest lease plus its turns at the average pace', () => {
    // Slots left by a worker that died, or whose release an outage lost, 3 s into their 5 s
    // leases: the 300 deliveries parked behind them are not held for the ceiling of a minute.
    const orphaned = { parked: 299, limit: 10, averageMs: 5, oldestHeldMs: 3_000, leaseMs: 5_000 };
    expect(parkDelayMs(orphaned, 60_000, 0.5)).toBe(2_000 + 30 * 5);
    // Past its end, a lease is gone: the turns at the average pace are what is left.
    expect(parkDelayMs({ ...orphaned, oldestHeldMs: 9_000 }, 60_000, 0.5)).toBe(30 * 5);
  });
});

describe('slowStartThreshold', () => {
  it('lets a callback that answers fast double, and a slow or unknown one earn one a window', () => {
    expect(slowStartThreshold(40, slowStartSlotMs)).toBe(40);
    expect(slowStartThreshold(40, 12)).toBe(40);
    expect(slowStartThreshold(40, slowStartSlotMs + 1)).toBe(0);
    expect(slowStartThreshold(40, null)).toBe(0);
    const bounds = { base: max, ceiling: 40 };
    expect(nextAllowance(max, 'increase', bounds, false, slowStartThreshold(40, 2_000))).toBe(max + 1);
  });
});

describe('nextThreshold', () => {
  const bounds = { base: max, ceiling: 40 };

  it('is where the allowance fell to, never below the base, and stays while it does not fall', () => {
    expect(nextThreshold(36, 18, 40, bounds, 'hold', false)).toBe(18);
    expect(nextThreshold(14, 10, 40, bounds, 'hold', false)).toBe(max);
    expect(nextThreshold(10, 5, 40, bounds, 'decrease', false)).toBe(max);
    expect(nextThreshold(20, 40, 40, bounds, 'increase', false)).toBe(40);
    expect(nextThreshold(18, 19, 18, bounds, 'increase', false)).toBe(18);
  });

  it('stays after a fall on latency alone, so that the allowance doubles back', () => {
    expect(nextThreshold(20, 10, 40, bounds, 'increase', true)).toBe(40);
    expect(nextAllowance(10, 'increase', bounds, false, 40)).toBe(20);
  });
});

describe('averageDurationMs', () => {
  it('starts at the first sample and moves a fifth of the way to each next one', () => {
    expect(averageDurationMs(null, 40)).toBe(40);
    expect(averageDurationMs(40, 140)).toBe(60);
  });
});

describe('entersThrottling', () => {
  it('is true only when the in-flight limit first drops below the maximum', () => {
    expect(entersThrottling(10, 5, 10)).toBe(true);
    expect(entersThrottling(10, 9.5, 10)).toBe(true);
    expect(entersThrottling(5, 2, 10)).toBe(false);
    expect(entersThrottling(10, 10, 10)).toBe(false);
    expect(entersThrottling(9.9, 10, 10)).toBe(false);
  });
});
