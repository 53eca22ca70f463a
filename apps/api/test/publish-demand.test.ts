import { describe, expect, it } from '@jest/globals';
import {
  createPublishDemand,
  demandMinRequests,
  demandWindowMs,
  overFairShare,
} from '../src/lib/publish-demand.js';

describe('the fair share of a saturated API', () => {
  it('lets an account asking less than an equal share through, and sheds one at or above it', () => {
    expect(overFairShare(1, 101, 2)).toBe(false);
    expect(overFairShare(100, 101, 2)).toBe(true);
    expect(overFairShare(50, 100, 2)).toBe(true);
    // A lone account asks everything: a saturated API still sheds it.
    expect(overFairShare(7, 7, 1)).toBe(true);
  });
});

describe('the demand counted over the last two windows', () => {
  it('counts a flood against itself, not against a quiet account', () => {
    const demand = createPublishDemand();
    const t = 10_000;
    for (let i = 0; i < 100; i++) demand.record('flood', t + i);
    expect(demand.record('quiet', t + 150)).toBe(false);
    expect(demand.record('flood', t + 151)).toBe(true);
  });

  it('weighs the first requests after a pause against the demand before it', () => {
    const demand = createPublishDemand();
    const t = 10_000;
    for (let i = 0; i < 100; i++) demand.record('flood', t);
    // Long after, the flood's last bucket still counts: a quiet account is under its share.
    expect(demand.record('quiet', t + 60_000)).toBe(false);
    // Once the quiet account alone filled a bucket, it is over its share.
    for (let i = 1; i < demandMinRequests; i++) demand.record('quiet', t + 60_000);
    expect(demand.record('quiet', t + 60_000 + demandWindowMs)).toBe(true);
  });

  it('does not let a bucket of one request before a pause become the whole measure', () => {
    const demand = createPublishDemand();
    const t = 10_000;
    for (let i = 0; i < 100; i++) demand.record('flood', t);
    // The flood's next bucket opens with one request, then the event loop is held.
    demand.record('flood', t + demandWindowMs);
    // The quiet account's first request after the hold weighs against the flood's 101, not its 1.
    expect(demand.record('quiet', t + 3 * demandWindowMs)).toBe(false);
    expect(demand.record('flood', t + 3 * demandWindowMs)).toBe(true);
  });
});
