/** Percentiles of latency samples, for the demo's and the benchmarks' summaries. */

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
