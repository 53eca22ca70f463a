/**
 * `pnpm bench [--quick] [--only <scenario,...>]`: every benchmark of issues #6 and #8 against the
 * real services, each figure as a ratio to a baseline measured in the same run. Writes bench/results/<date>.json and .md and
 * prints the table. Timing never fails anything: targets missed are marked, not thrown.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { apiThroughput } from './api-scenarios.js';
import { deliveryThroughput, retryLoad, steadyLatency } from './delivery-scenarios.js';
import { fairness } from './fairness-scenario.js';
import { transportBaseline } from './harness.js';
import { workerMemory } from './memory.js';

const workerHeapLimit = '--max-old-space-size=192';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
const quick = values.quick;
/** `--only fairness,latency` runs those scenarios alone (names as in `scenarios` below). */
const only = values.only?.split(',').map((name) => name.trim());
const size = quick
  ? {
      e2e: 2_000,
      fanOutEvents: 20,
      latencySeconds: 10,
      retryEvents: 500,
      apiSeconds: 3,
      memoryEvents: 100,
      fairnessSeconds: 10,
    }
  : {
      e2e: 20_000,
      fanOutEvents: 200,
      latencySeconds: 30,
      retryEvents: 5_000,
      apiSeconds: 10,
      memoryEvents: 1_000,
      fairnessSeconds: 30,
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

type Row = [string, string, string, string, string];
const results: Record<string, unknown> = {};

/** Each scenario runs, keeps its figures in `results` and returns its table rows. */
const scenarios: Record<string, () => Promise<Row[]>> = {
  async throughput() {
    step('transport');
    const transport = await transportBaseline(size.e2e, 50);
    const e2e = await deliveryThroughput('e2e', size.e2e, 1, 1, progress);
    const fanOut = await deliveryThroughput('fan-out', size.fanOutEvents, 100, 1, progress);
    Object.assign(results, { transport, e2e, fanOut });
    return [
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
    ];
  },
  async latency() {
    const latency = await steadyLatency(200, size.latencySeconds, progress);
    results.latency = latency;
    return [
      [
        'latency at 200 events/s',
        `p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms`,
        '—',
        '—',
        verdict(latency.p50Ms <= 15 && latency.p99Ms <= 100, 'p50 ≤ 15, p99 ≤ 100 ms'),
      ],
    ];
  },
  async retry() {
    const retry = await retryLoad(size.retryEvents, progress);
    results.retry = retry;
    return [
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
    ];
  },
  async fairness() {
    const runs = await fairness(50, size.fairnessSeconds, progress);
    results.fairness = runs;
    const names = {
      hang: '1 of 10 hangs',
      fail: '1 of 10 answers 500',
      'hang-other-account': "another account's hangs",
    };
    return runs.map((run) => [
      `fairness: ${names[run.variant]}`,
      `healthy p50 ${run.faulty.p50Ms.toFixed(0)} ms, p99 ${run.faulty.p99Ms.toFixed(0)} ms; ${run.faulty.arrived} of ${run.faulty.expected} arrived, the last ${(run.faulty.lastArrivalAfterEndMs / 1000).toFixed(1)} s after publishing ended`,
      `same load without the fault: p50 ${run.pair.p50Ms.toFixed(0)} ms, p99 ${run.pair.p99Ms.toFixed(0)} ms`,
      `p99 ${run.p99Ratio.toFixed(2)}`,
      verdict(run.met, 'p99 ≤ 2× and all within 5 s'),
    ]);
  },
  async api() {
    const api = await apiThroughput(size.apiSeconds, step);
    results.api = api;
    return [
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
    ];
  },
  async memory() {
    const memory = await workerMemory(size.memoryEvents, [], (done, total) =>
      progress('memory', done, total),
    );
    // The worker image's heap limit (docker/worker.Dockerfile): the deployed configuration.
    const memoryLimited = await workerMemory(size.memoryEvents, [workerHeapLimit], (done, total) =>
      progress('memory/lim', done, total),
    );
    Object.assign(results, { memory, memoryLimited });
    return [
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
    });
  },
};

const unknown = only?.filter((name) => !(name in scenarios)) ?? [];
if (unknown.length > 0)
  throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}`);
const rows: Row[] = [];
for (const [name, run] of Object.entries(scenarios))
  if (!only || only.includes(name)) rows.push(...(await run()));
bar.stop();

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
const base = new URL(`${date}${quick ? '-quick' : ''}${only ? `-${only.join('-')}` : ''}`, resultsDir);
await writeFile(
  `${base.pathname}.json`,
  `${JSON.stringify({ date, quick, only: only ?? 'all', machine, size, ...results }, null, 2)}\n`,
);
await writeFile(
  `${base.pathname}.md`,
  `# Benchmark ${date}${quick ? ' (quick)' : ''}\n\n${machine}\n\n${table}\n`,
);
console.log(`\n${machine}\n\n${table}\n\nwritten: ${base.pathname}.json and .md`);
process.exit(0);

function verdict(met: boolean, target: string): string {
  return `${target}: ${met ? 'met' : '**missed**'}`;
}
