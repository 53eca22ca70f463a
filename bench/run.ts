/**
 * `pnpm bench [--quick]`: every benchmark of issue #6 against the real services, each figure as a
 * ratio to a baseline measured in the same run. Writes bench/results/<date>.json and .md and
 * prints the table. Timing never fails anything: targets missed are marked, not thrown.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { apiThroughput } from './api-scenarios.js';
import { deliveryThroughput, retryLoad, steadyLatency } from './delivery-scenarios.js';
import { transportBaseline } from './harness.js';
import { workerMemory } from './memory.js';

const workerHeapLimit = '--max-old-space-size=192';

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const quick = values.quick;
const size = quick
  ? { e2e: 2_000, fanOutEvents: 20, latencySeconds: 10, retryEvents: 500, apiSeconds: 3, memoryEvents: 100 }
  : {
      e2e: 20_000,
      fanOutEvents: 200,
      latencySeconds: 30,
      retryEvents: 5_000,
      apiSeconds: 10,
      memoryEvents: 1_000,
    };

const bar = new SingleBar(
  { format: '{scenario} |{bar}| {value}/{total}', hideCursor: true },
  Presets.shades_classic,
);
let current = '';
const progress = (scenario: string, done: number, total: number) => {
  if (scenario !== current) {
    if (current) bar.stop();
    bar.start(total, done, { scenario: scenario.padEnd(10) });
    current = scenario;
  }
  bar.update(done, { scenario: scenario.padEnd(10) });
};
const step = (name: string) => progress(name, 0, 1);

step('transport');
const transport = await transportBaseline(size.e2e, 50);
const e2e = await deliveryThroughput('e2e', size.e2e, 1, 1, progress);
const fanOut = await deliveryThroughput('fan-out', size.fanOutEvents, 100, 1, progress);
const latency = await steadyLatency(200, size.latencySeconds, progress);
const retry = await retryLoad(size.retryEvents, progress);
const api = await apiThroughput(size.apiSeconds, step);
const memory = await workerMemory(size.memoryEvents, [], (done, total) => progress('memory', done, total));
// The worker image's heap limit (docker/worker.Dockerfile): the deployed configuration.
const memoryLimited = await workerMemory(size.memoryEvents, [workerHeapLimit], (done, total) =>
  progress('memory/lim', done, total),
);
bar.stop();

type Row = [string, string, string, string, string];
const rows: Row[] = [
  [
    'end-to-end delivery',
    `${e2e.deliveriesPerSecond.toFixed(0)} deliveries/s (${e2e.deliveries})`,
    `${transport.toFixed(0)} POST/s (got, 50 in flight)`,
    `${(e2e.deliveriesPerSecond / transport).toFixed(2)}`,
    verdict(e2e.deliveriesPerSecond / transport >= 0.5, '≥ 0.50'),
  ],
  [
    'fan-out 1 → 100',
    `${fanOut.deliveriesPerSecond.toFixed(0)} deliveries/s (${fanOut.deliveries})`,
    `${transport.toFixed(0)} POST/s`,
    `${(fanOut.deliveriesPerSecond / transport).toFixed(2)}`,
    verdict(fanOut.deliveriesPerSecond / transport >= 0.5, '≥ 0.50'),
  ],
  [
    'latency at 200 events/s',
    `p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms`,
    '—',
    '—',
    verdict(latency.p50Ms <= 15 && latency.p99Ms <= 100, 'p50 ≤ 15, p99 ≤ 100 ms'),
  ],
  [
    'retry load (50% fail)',
    `${retry.deliveriesPerSecond.toFixed(0)} deliveries/s; ${retry.confirmed} confirmed, ${retry.givenUp} given up after ${retry.maxAttemptsAllowed} attempts, ${retry.lost} lost; max ${retry.maxAttemptsSeen} attempts`,
    '—',
    '—',
    verdict(
      retry.lost === 0 && retry.maxAttemptsSeen <= retry.maxAttemptsAllowed,
      `none lost, ≤ ${retry.maxAttemptsAllowed} attempts`,
    ),
  ],
  [
    'POST /api/events ingest',
    `${api.ingest.requestsPerSecond.toFixed(0)} req/s`,
    `${api.ingest.baseline.toFixed(0)} req/s (bare route)`,
    api.ingest.ratio.toFixed(2),
    verdict(api.ingest.ratio >= 0.4, '≥ 0.40'),
  ],
  [
    'GET /api/webhooks/{id}',
    `${api.read.requestsPerSecond.toFixed(0)} req/s`,
    `${api.read.baseline.toFixed(0)} req/s (pg route)`,
    api.read.ratio.toFixed(2),
    verdict(api.read.ratio >= 0.7, '≥ 0.70'),
  ],
  ...[
    ['worker memory (node defaults)', memory],
    [`worker memory (${workerHeapLimit}, as the image runs it)`, memoryLimited],
  ].map(([name, m]) => {
    const run = m as typeof memory;
    const quarters = run.rssMiBAtQuarters;
    return [
      name as string,
      `peak ${run.peakMiB.toFixed(0)} MiB; by quarter ${quarters.map((q) => q.toFixed(0)).join(' / ')} MiB (${run.deliveries} deliveries)`,
      '—',
      '—',
      verdict(run.peakMiB < 300 && (quarters[3] ?? 0) <= (quarters[0] ?? 0) * 1.25, '< 300 MiB and flat'),
    ] as Row;
  }),
];
const table = [
  `| scenario | figure | baseline (same run) | ratio | target |`,
  `|---|---|---|---|---|`,
  ...rows.map((row) => `| ${row.join(' | ')} |`),
].join('\n');

const date = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
const machine = `${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`;
// This file runs as dist/bench/run.js; results go beside the sources, in bench/results.
const resultsDir = new URL('../../bench/results/', import.meta.url);
await mkdir(resultsDir, { recursive: true });
const base = new URL(`${date}${quick ? '-quick' : ''}`, resultsDir);
const results = {
  date,
  quick,
  machine,
  size,
  transport,
  e2e,
  fanOut,
  latency,
  retry,
  api,
  memory,
  memoryLimited,
};
await writeFile(`${base.pathname}.json`, `${JSON.stringify(results, null, 2)}\n`);
await writeFile(
  `${base.pathname}.md`,
  `# Benchmark ${date}${quick ? ' (quick)' : ''}\n\n${machine}\n\n${table}\n`,
);
console.log(`\n${machine}\n\n${table}\n\nwritten: ${base.pathname}.json and .md`);
process.exit(0);

function verdict(met: boolean, target: string): string {
  return `${target}: ${met ? 'met' : '**missed**'}`;
}
