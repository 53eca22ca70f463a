/**
 * The pace of a recovery (`lib/recovery-pace.ts`): the windows a budget is spent in, and when each
 * round a recover call starts is sent. End to end, the pace is in the worker's retry-fairness and
 * durability tests.
 */
import { describe, expect, it } from '@jest/globals';
import { grantedRounds, paceWindow, recoveryDelays } from '../src/lib/recovery-pace.js';

describe('the windows of a recovery budget', () => {
  it('spends the default budget a second at a time, never more than its share', () => {
    // 10,000 a minute is 166.7 a second: 166, so 60 windows start 9,960.
    expect(paceWindow(10_000)).toEqual({ seconds: 1, rounds: 166 });
  });

  it('stretches a window over whole seconds until it holds two rounds when the budget is small', () => {
    expect(paceWindow(120)).toEqual({ seconds: 1, rounds: 2 });
    expect(paceWindow(100)).toEqual({ seconds: 2, rounds: 3 });
    expect(paceWindow(12)).toEqual({ seconds: 10, rounds: 2 });
    expect(paceWindow(2)).toEqual({ seconds: 60, rounds: 2 });
    expect(paceWindow(1)).toEqual({ seconds: 120, rounds: 2 });
  });

  it('never starts more in a minute than the budget', () => {
    for (const budget of [1, 2, 7, 12, 59, 61, 100, 119, 120, 121, 1_000, 10_000, 1_000_000]) {
      const { seconds, rounds } = paceWindow(budget);
      expect(rounds).toBeGreaterThanOrEqual(2);
      expect((rounds * 60) / seconds).toBeLessThanOrEqual(budget);
    }
  });
});

describe("a call's share of its window", () => {
  it('gets what it reserved while the window holds it', () => {
    // A window of 6: alone, a call for 4 gets 4; after a call that took 1, a call for 5 gets 5.
    expect(grantedRounds(6, 4, 4)).toBe(4);
    expect(grantedRounds(6, 6, 5)).toBe(5);
  });

  it('gets only the places left under the window when concurrent calls reserved first', () => {
    // 4 taken before a call for 4: 2 left for it; 6 taken before: none.
    expect(grantedRounds(6, 8, 4)).toBe(2);
    expect(grantedRounds(6, 10, 4)).toBe(0);
    expect(grantedRounds(6, 30, 4)).toBe(0);
  });
});

describe('the pace of a recovery', () => {
  const window = (rounds: number, lengthMs: number, consumed: number, msBeforeNext: number) => ({
    rounds,
    lengthMs,
    consumed,
    msBeforeNext,
  });

  it("spreads a window's rounds evenly over it, the first at once", () => {
    // A fresh 10 s window of 2 rounds: one at once, one 5 s later.
    expect(recoveryDelays(window(2, 10_000, 2, 10_000), 2)).toEqual([0, 5_000]);
  });

  it('sends the rounds of each 100 ms together', () => {
    // 166 in a second: one every 6 ms, so rounds 0 to 16 are due at once and 17 to 19 at 100 ms.
    const delays = recoveryDelays(window(166, 1_000, 20, 1_000), 20);
    expect(delays).toEqual([...Array(17).fill(0), 100, 100, 100]);
  });

  it("continues after the rounds the window's earlier calls started, from the window's start", () => {
    // 6 rounds in 60 s; 2 counted before this call, 15 s into the window.
    expect(recoveryDelays(window(6, 60_000, 4, 45_000), 2)).toEqual([5_000, 15_000]);
  });

  it('sends at once a round whose time in the window has passed', () => {
    // 50 s into a 60 s window of 6, 1 round counted before: its slot (10 s) is long past, the next at 20 s too.
    expect(recoveryDelays(window(6, 60_000, 3, 10_000), 2)).toEqual([0, 0]);
  });

  it('waits no longer than the window for a budget the calls do not reach', () => {
    const { seconds, rounds } = paceWindow(1_000_000);
    const delays = recoveryDelays(window(rounds, seconds * 1000, 1_000, 1_000), 1_000);
    expect(Math.max(...delays)).toBeLessThan(100);
  });
});
