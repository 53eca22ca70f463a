/**
 * Figures of the scenarios measured in rounds (log-growth-scenario.ts): a stack against another
 * stack, round by round. Each takes every stack's values in the order its rounds were measured;
 * round `i` of one stack and round `i` of another ran back to back on the same machine.
 */
import { percentile } from '../scripts/lib/stats.js';

/**
 * One stack's figure against another's: the median of their rounds' ratios, round by round. The
 * two stacks of a round are measured minutes apart at most, so the machine's drift over the
 * scenario cancels in each round's ratio, where the ratio of two medians would carry it.
 *
 * @param measured each round's value of the stack measured, in round order
 * @param baseline each round's value of its baseline, in the same order
 * @returns measured / baseline; NaN when there are no rounds
 */
export function roundsRatio(measured: readonly number[], baseline: readonly number[]): number {
  return percentile(
    measured.map((value, round) => value / baseline[round]!),
    50,
  );
}

/** A stack's end-to-end rounds: CPU ms per delivery of all its processes, and of PostgreSQL alone. */
export interface CpuRounds {
  e2eCpuMs: readonly number[];
  e2ePostgresCpuMs: readonly number[];
}

/**
 * What partitioning costs a delivery, as a share of all the CPU a delivery costs: round by round,
 * the PostgreSQL CPU ms per delivery the partitioned stack spent beyond the unpartitioned one,
 * over the unpartitioned stack's CPU ms per delivery of all processes (API, worker, Redis,
 * PostgreSQL); the median of the rounds. Both layouts run the same worker, which sends the same
 * statements and the same Redis commands (70.8-71.0 per delivery on both), so partitioning can add
 * work only in PostgreSQL; the worker's own CPU per delivery, 1.04-1.50 ms in four runs' medians
 * with no direction between the layouts, would otherwise drown a cost of a few percent.
 *
 * @returns a fraction: 0.05 is 5% of a delivery's CPU; negative when PostgreSQL spent less
 */
export function partitioningShare(partitioned: CpuRounds, unpartitioned: CpuRounds): number {
  return percentile(
    partitioned.e2ePostgresCpuMs.map(
      (ms, round) => (ms - unpartitioned.e2ePostgresCpuMs[round]!) / unpartitioned.e2eCpuMs[round]!,
    ),
    50,
  );
}
