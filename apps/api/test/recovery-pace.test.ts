/**
 * The pace of a recovery (`lib/recovery-pace.ts`): when each round a recover call starts is sent.
 * End to end, the pace is in the worker's retry-fairness test.
 */
import { describe, expect, it } from '@jest/globals';
import { recoveryDelays } from '../src/lib/recovery-pace.js';

describe('the pace of a recovery', () => {
  it("spreads a minute's budget evenly over the minute, the first round at once", () => {
    // A fresh minute (all of it left), 6 rounds a minute: one every 10 s.
    expect(recoveryDelays({ budget: 6, consumed: 3, msBeforeNext: 60_000 }, 3)).toEqual([0, 10_000, 20_000]);
  });

  it('sends the rounds of each 100 ms together', () => {
    // 10,000 a minute: one every 6 ms, so rounds 0 to 16 are due at once and 17 to 19 at 100 ms.
    const delays = recoveryDelays({ budget: 10_000, consumed: 20, msBeforeNext: 60_000 }, 20);
    expect(delays).toEqual([...Array(17).fill(0), 100, 100, 100]);
  });

  it("continues after the rounds the minute's earlier calls started, from the minute's start", () => {
    // 2 rounds were counted before this call, 15 s into the minute.
    expect(recoveryDelays({ budget: 6, consumed: 4, msBeforeNext: 45_000 }, 2)).toEqual([5_000, 15_000]);
  });

  it('sends at once a round whose time in the minute has passed', () => {
    // 50 s into the minute, 1 round counted before: its slot (10 s) is long past, the next at 20 s too.
    expect(recoveryDelays({ budget: 6, consumed: 3, msBeforeNext: 10_000 }, 2)).toEqual([0, 0]);
  });

  it('keeps counting past the budget when a concurrent call overspent it, so nothing bunches up', () => {
    expect(recoveryDelays({ budget: 6, consumed: 7, msBeforeNext: 60_000 }, 1)).toEqual([60_000]);
  });

  it('does not pace a budget larger than the calls spend', () => {
    const delays = recoveryDelays({ budget: 1_000_000, consumed: 1_000, msBeforeNext: 60_000 }, 1_000);
    expect(Math.max(...delays)).toBeLessThan(60);
  });
});
