/**
 * One benchmark result row, as `pnpm bench` prints it, stores it in its JSON (`rows`) and as
 * scripts/bench-tables.ts renders it into the README and bench/README.md.
 */

/** One row: a figure, its baseline of the same run, their ratio (null: an absolute target). */
export interface BenchRow {
  scenario: string;
  /** What was measured, with units. */
  figure: string;
  /** The baseline measured in the same run, or `—`. */
  baseline: string;
  ratio: number | null;
  /** The target as text (`≥ 0.65`, `p99 ≤ 20 ms`), or null for a figure only reported. */
  target: string | null;
  /** Whether the target was met; null without one. */
  met: boolean | null;
}

const verdict = (row: BenchRow) => (row.met === null ? 'reported' : row.met ? 'met' : 'MISSED');

/** The one-line form printed as each scenario finishes. */
export function formatRow(row: BenchRow): string {
  const ratio = row.ratio === null ? '' : `, ratio ${row.ratio.toFixed(2)}`;
  const baseline = row.baseline === '—' ? '' : ` vs ${row.baseline}`;
  const target = row.target === null ? '' : ` (target ${row.target})`;
  return `${verdict(row).padEnd(8)} ${row.scenario}: ${row.figure}${baseline}${ratio}${target}`;
}

/** The Markdown table of `rows`. */
export function renderTable(rows: BenchRow[]): string {
  return [
    '| scenario | figure | baseline (same run) | ratio | target |',
    '|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${[
          row.scenario,
          row.figure,
          row.baseline,
          row.ratio === null ? '—' : row.ratio.toFixed(2),
          row.target === null ? 'reported' : `${row.target}: ${row.met ? 'met' : '**missed**'}`,
        ].join(' | ')} |`,
    ),
  ].join('\n');
}
