/** The circuit breaker's pure rules: when it opens, reopens and closes, and its cool-downs. */
import { describe, expect, it } from '@jest/globals';
import {
  breakerCooldownMs,
  breakerOptionsFromEnv,
  breakerState,
  breakerTransition,
  ConfigError,
  type BreakerOptions,
} from '../src/index.js';

const options: BreakerOptions = {
  failuresInRow: 10,
  failureRate: 0.5,
  minAttempts: 20,
  windowMs: 60_000,
  cooldownMs: 30_000,
  maxCooldownMs: 900_000,
};
const closed = { failuresInRow: 0, windowAttempts: 0, windowFailures: 0, opens: 0 };

describe('breakerTransition', () => {
  it('opens a closed breaker at the run of failures, not one before', () => {
    expect(
      breakerTransition(
        { ...closed, failuresInRow: 9, windowAttempts: 9, windowFailures: 9 },
        false,
        false,
        options,
      ),
    ).toBeNull();
    expect(
      breakerTransition(
        { ...closed, failuresInRow: 10, windowAttempts: 10, windowFailures: 10 },
        false,
        false,
        options,
      ),
    ).toEqual({
      kind: 'open',
      reason: 'consecutive_failures',
      cooldownMs: 30_000,
    });
  });

  it('opens on the failure rate only once the window holds enough attempts', () => {
    expect(
      breakerTransition(
        { ...closed, failuresInRow: 1, windowAttempts: 19, windowFailures: 19 },
        false,
        false,
        options,
      ),
    ).toBeNull();
    expect(
      breakerTransition(
        { ...closed, failuresInRow: 1, windowAttempts: 20, windowFailures: 10 },
        false,
        false,
        options,
      ),
    ).toEqual({
      kind: 'open',
      reason: 'failure_rate',
      cooldownMs: 30_000,
    });
    expect(
      breakerTransition(
        { ...closed, failuresInRow: 1, windowAttempts: 20, windowFailures: 9 },
        false,
        false,
        options,
      ),
    ).toBeNull();
  });

  it('never opens on a confirmed attempt, and a confirmed attempt closes an open one', () => {
    expect(
      breakerTransition({ ...closed, windowAttempts: 40, windowFailures: 39 }, true, false, options),
    ).toBeNull();
    expect(breakerTransition({ ...closed, opens: 1 }, true, false, options)).toEqual({ kind: 'close' });
    expect(breakerTransition({ ...closed, opens: 3 }, true, true, options)).toEqual({ kind: 'close' });
  });

  it('reopens for twice as long when the probe fails; other failures while open change nothing', () => {
    expect(breakerTransition({ ...closed, failuresInRow: 30, opens: 1 }, false, false, options)).toBeNull();
    expect(breakerTransition({ ...closed, opens: 1 }, false, true, options)).toEqual({
      kind: 'reopen',
      cooldownMs: 60_000,
    });
    expect(breakerTransition({ ...closed, opens: 2 }, false, true, options)).toEqual({
      kind: 'reopen',
      cooldownMs: 120_000,
    });
  });
});

describe('breakerCooldownMs', () => {
  it('doubles from the first cool-down up to the longest', () => {
    expect([1, 2, 3, 5, 6, 100].map((opens) => breakerCooldownMs(opens, options))).toEqual([
      30_000, 60_000, 120_000, 480_000, 900_000, 900_000,
    ]);
  });
});

describe('breakerState', () => {
  it('is open until the cool-down ends, then half-open; closed without one', () => {
    expect(breakerState(null, 5)).toBe('closed');
    expect(breakerState(10, 5)).toBe('open');
    expect(breakerState(10, 10)).toBe('half_open');
  });
});

describe('breakerOptionsFromEnv', () => {
  it('refuses a longest cool-down below the first, naming the variable', () => {
    const env = {
      BREAKER_FAILURES_IN_ROW: 10,
      BREAKER_FAILURE_RATE: 0.5,
      BREAKER_MIN_ATTEMPTS: 20,
      BREAKER_WINDOW_MS: 60_000,
      BREAKER_COOLDOWN_MS: 30_000,
      BREAKER_MAX_COOLDOWN_MS: 1_000,
    };
    expect(() => breakerOptionsFromEnv(env)).toThrow(ConfigError);
    expect(() => breakerOptionsFromEnv(env)).toThrow(/BREAKER_MAX_COOLDOWN_MS=1000/);
  });
});
