import { describe, expect, it } from '@jest/globals';
import {
  failingRun,
  healthState,
  hourlySeries,
  successRate,
  type AttemptWindow,
} from '../src/lib/endpoint-health.js';

const window = (attempts: number, succeeded: number): AttemptWindow => ({
  attempts,
  succeeded,
  p50Ms: attempts === 0 ? null : 10,
  p95Ms: attempts === 0 ? null : 20,
});
const state = (recent: AttemptWindow, consecutiveFailures = 0, day = recent) =>
  healthState({ recent, day: day.attempts === 0 ? recent : day, consecutiveFailures });

describe('an endpoint’s health', () => {
  it('is idle without an attempt in 24 hours', () => {
    expect(healthState({ recent: window(0, 0), day: window(0, 0), consecutiveFailures: 0 })).toBe('idle');
  });

  it('is healthy when its attempts are confirmed, and quiet for 15 minutes after a good day', () => {
    expect(state(window(100, 100))).toBe('healthy');
    expect(state(window(0, 0), 0, window(500, 499))).toBe('healthy');
  });

  it('degrades when its last attempt failed or under 95% were confirmed', () => {
    expect(state(window(100, 100), 1)).toBe('degraded');
    expect(state(window(100, 90))).toBe('degraded');
  });

  it('fails after a run of failed attempts, or under half confirmed', () => {
    expect(state(window(3, 0), failingRun)).toBe('failing');
    expect(state(window(100, 40))).toBe('failing');
  });

  it('does not judge a rate on a handful of attempts', () => {
    expect(state(window(3, 1))).toBe('healthy');
    expect(successRate(window(4, 1))).toBe(0.25);
    expect(successRate(window(0, 0))).toBeNull();
  });
});

describe('the hourly series', () => {
  it('holds the 24 hours ending with the current one, oldest first, empty hours at zero', () => {
    const now = new Date('2026-12-04T12:34:56.000Z');
    const busy = {
      hour: new Date('2026-12-04T10:00:00.000Z'),
      succeeded: 7,
      failed: 2,
      p50Ms: 12,
      p95Ms: 40,
    };
    const tooOld = {
      hour: new Date('2026-12-03T12:00:00.000Z'),
      succeeded: 1,
      failed: 0,
      p50Ms: 5,
      p95Ms: 5,
    };
    const series = hourlySeries([busy, tooOld], now);
    expect(series).toHaveLength(24);
    expect(series[0]!.hour.toISOString()).toBe('2026-12-03T13:00:00.000Z');
    expect(series[23]!.hour.toISOString()).toBe('2026-12-04T12:00:00.000Z');
    expect(series[21]).toBe(busy);
    expect(series.filter((hour) => hour.succeeded + hour.failed > 0)).toEqual([busy]);
    expect(series[22]).toEqual({
      hour: new Date('2026-12-04T11:00:00.000Z'),
      succeeded: 0,
      failed: 0,
      p50Ms: null,
      p95Ms: null,
    });
  });
});
