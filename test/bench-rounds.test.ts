import { describe, expect, it } from '@jest/globals';
import { partitioningShare, roundsRatio } from '../bench/rounds.js';
import { percentile } from '../scripts/lib/stats.js';

describe('a stack against another, round by round (bench/rounds.ts)', () => {
  it('takes the median of the rounds’ ratios, so that one disturbed round does not move it', () => {
    // The third round of the measured stack ran while the machine was busy.
    expect(roundsRatio([900, 880, 300, 910, 870], [1000, 1000, 1000, 1000, 1000])).toBeCloseTo(0.88);
  });

  it('cancels a drift of the machine that both stacks of a round share, where the ratio of medians would not', () => {
    // The machine runs at half speed in rounds 2 and 3; the measured stack is 0.9 of its baseline
    // in every round but the last, which was disturbed.
    const baseline = [1000, 500, 500, 1000, 1000];
    const measured = [900, 450, 450, 900, 400];
    expect(roundsRatio(measured, baseline)).toBeCloseTo(0.9);
    expect(percentile(measured, 50) / percentile(baseline, 50)).toBeCloseTo(0.45);
  });

  it('charges partitioning what PostgreSQL spent beyond the plain log, over all the CPU of a delivery', () => {
    const plain = { e2ePostgresCpuMs: [0.23, 0.22, 0.2], e2eCpuMs: [1.7, 1.8, 2.0] };
    // The worker's CPU differs between the stacks; only PostgreSQL's counts.
    const partitioned = { e2ePostgresCpuMs: [0.3, 0.26, 0.5], e2eCpuMs: [2.4, 1.5, 2.9] };
    expect(partitioningShare(partitioned, plain)).toBeCloseTo((0.3 - 0.23) / 1.7);
  });

  it('reads negative when the partitioned log cost PostgreSQL less', () => {
    const plain = { e2ePostgresCpuMs: [0.3], e2eCpuMs: [2] };
    expect(partitioningShare({ e2ePostgresCpuMs: [0.2], e2eCpuMs: [2] }, plain)).toBeCloseTo(-0.05);
  });
});
