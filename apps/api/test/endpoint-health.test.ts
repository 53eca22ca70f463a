import { describe, expect, it } from '@jest/globals';
import { failingRun, healthState, successRate, type AttemptWindow } from '../src/lib/endpoint-health.js';

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
