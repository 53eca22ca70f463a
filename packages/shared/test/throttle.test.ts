/** Unit tests of the adaptive in-flight allowance (AIMD). */
import { describe, expect, it } from '@jest/globals';
import {
  entersThrottling,
  averageDurationMs,
  congestionSignal,
  inFlightLimit,
  minParkMs,
  nextAllowance,
  parkDelayMs,
  throttleState,
} from '../src/throttle.js';

const max = 10;

describe('congestionSignal', () => {
  it('raises on a confirmed attempt and lowers on a timeout or a failed connection', () => {
    expect(congestionSignal({ statusCode: 200, errorClass: null })).toBe('increase');
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
  it('halves on congestion, down to 1', () => {
    const drops = [10];
    while (drops.at(-1)! > 1) drops.push(nextAllowance(drops.at(-1)!, 'decrease', max));
    expect(drops).toEqual([10, 5, 2, 1]);
    expect(nextAllowance(1, 'decrease', max)).toBe(1);
  });

  it('climbs back by one per window of successes, up to the maximum', () => {
    let allowance = 1;
    let successes = 0;
    while (allowance < max) {
      allowance = nextAllowance(allowance, 'increase', max);
      successes++;
    }
    expect(allowance).toBe(max);
    // A window at limit L takes L successes: 1 + 2 + ... + 9, give or take rounding.
    expect(successes).toBeGreaterThanOrEqual(45);
    expect(successes).toBeLessThanOrEqual(50);
    expect(nextAllowance(max, 'increase', max)).toBe(max);
  });

  it('holds otherwise', () => {
    expect(nextAllowance(3.5, 'hold', max)).toBe(3.5);
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
  it('waits about the turn of the deliveries ahead: place in line / limit × slot time', () => {
    expect(parkDelayMs(19, 10, 100, 60_000, 0.5)).toBe(200);
    expect(parkDelayMs(0, 1, 10_000, 60_000, 0.5)).toBe(10_000);
  });

  it('stays between the floor and the ceiling, spread by ±10%', () => {
    expect(parkDelayMs(0, 10, 1, 60_000, 0.5)).toBe(minParkMs);
    expect(parkDelayMs(5_000, 1, 10_000, 60_000, 0.5)).toBe(60_000);
    expect(parkDelayMs(19, 10, 100, 60_000, 0)).toBe(180);
    expect(parkDelayMs(19, 10, 100, 60_000, 0.999)).toBe(220);
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
