/**
 * The benchmark tables of docs/performance.md and bench/README.md ("Latest figures"),
 * generated from the newest full run committed in bench/results so they cannot drift:
 * `pnpm docs:bench` rewrites both between the bench-table markers, and a test fails when either
 * differs from what this produces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderTable, type BenchRow } from '../bench/table.js';
import { replaceBetweenMarkers } from './lib/markers.js';
import { repositoryRoot } from './lib/repository-root.js';

/** Markers around the generated table. */
export const markers = ['<!-- bench-table:start -->', '<!-- bench-table:end -->'] as const;

/** The files holding the table, relative to the repository root. */
export const tableFiles = ['docs/performance.md', 'bench/README.md'] as const;

/** What the tables need of a results file written by `pnpm bench` (bench/run.ts). */
interface FullRun {
  date: string;
  machine: string;
  quick: boolean;
  only: string | string[];
  rows?: BenchRow[];
}

/**
 * The newest full run (not `--quick`, not `--only`) with rows, and its file name.
 *
 * @throws Error when bench/results holds none
 */
export function newestFullRun(resultsDir: string): { file: string; run: FullRun & { rows: BenchRow[] } } {
  const files = readdirSync(resultsDir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .reverse();
  for (const file of files) {
    const run = JSON.parse(readFileSync(path.join(resultsDir, file), 'utf8')) as FullRun;
    if (!run.quick && run.only === 'all' && run.rows !== undefined)
      return { file, run: { ...run, rows: run.rows } };
  }
  throw new Error(`no full run with rows in ${resultsDir}: run pnpm bench`);
}

/** The generated block: where the figures come from, and the table. */
export function benchBlock(resultsDir: string): string {
  const { file, run } = newestFullRun(resultsDir);
  return `Full run of ${run.date} (${run.machine}; \`bench/results/${file}\`):\n\n${renderTable(run.rows)}`;
}

/** `text` (one of {@link tableFiles}) with its table replaced by the generated one. */
export function withBenchTable(text: string, file: string, resultsDir: string): string {
  return replaceBetweenMarkers(text, markers, benchBlock(resultsDir), file);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = repositoryRoot();
  const resultsDir = path.join(root, 'bench/results');
  for (const file of tableFiles) {
    const target = path.join(root, file);
    await writeFile(target, withBenchTable(await readFile(target, 'utf8'), file, resultsDir));
  }
  console.log(`benchmark tables of ${tableFiles.join(' and ')} updated`);
}
