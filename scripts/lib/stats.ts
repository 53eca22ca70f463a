/** Percentiles of latency samples and shares of a total, for the demo's, the benchmarks' and the tests' summaries. */

/**
 * The `p`-th percentile (0..100) of `samples` by the nearest-rank method; NaN when empty.
 * Units are the samples' own (milliseconds throughout this project).
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/** Each of `values` as a fraction (0..1) of their sum, in the same order; NaN each when the sum is 0. */
export function shares(values: readonly number[]): number[] {
  const total = values.reduce((sum, value) => sum + value, 0);
  return values.map((value) => value / total);
}
