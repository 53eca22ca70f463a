/**
 * `pnpm bench [--quick] [--only <scenario,...>] [--capacity <deliveries/s>]`: every benchmark against
 * the real services, each figure as a ratio to a baseline measured in the same run. Prints one line
 * per scenario as it finishes, then the table; writes bench/results/<date>.json (every row with its
 * `ratio`, `target` and `met`) and .md. Timing never fails anything: targets missed are marked,
 * not thrown, and a scenario that throws is a missed row while the others run on.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SingleBar, Presets } from 'cli-progress';
import { apiThroughput } from './api-scenarios.js';
import {
  deliveryThroughput,
  retryLoad,
  steadyLatency,
  sustainedDrainWaitMs,
  sustainedLoad,
  sustainedWarmupSeconds,
  type DeliveryThroughput,
} from './delivery-scenarios.js';
import { fairness, fairnessRate, type FairnessResult, type FairnessVariant } from './fairness-scenario.js';
import { tracingCost } from './tracing-scenario.js';
import { apiSpike, type SpikeRun } from './spike-scenario.js';
import { createTransformationRunner } from '@webhooks/shared';
import { catalogueCost } from './catalogue-scenario.js';
import { destinationCost } from './destinations-scenario.js';
import { awsDestinationCost } from './aws-destinations-scenario.js';
import {
  accountFairness,
  retryFairness,
  recoverFairness,
  recoveryPacePerSecond,
  steadySubscriptions as accountSteadySubscriptions,
  type AccountFloodRun,
  type StepLatencies,
  type StepPercentiles,
} from './account-fairness-scenario.js';
import { retentionCost } from './retention-scenario.js';
import { logGrowth, type LogRun } from './log-growth-scenario.js';
import { partitioningShare, roundsRatio } from './rounds.js';
import { overload, overloadSubscriptions } from './overload-scenario.js';
import { flood, type FloodRun } from './flood-scenario.js';
import { shardedQueues, type ClusterRun } from './sharding-scenario.js';
import type { DeliveryCost } from './cost-probe.js';
import { queueFloorBaseline, transportBaseline } from './harness.js';
import { operatingPointCost } from './operating-point-scenario.js';
import { workerMemory } from './memory.js';
import { pathScenario } from './path-probe.js';
import { formatRow, renderTable, type BenchRow } from './table.js';
import { percentile } from '../scripts/lib/stats.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    capacity: { type: 'string' },
  },
});
const quick = values.quick;
/** `--only fairness,latency` runs those scenarios alone (names as in `scenarios` below). */
const only = values.only?.split(',').map((name) => name.trim());
/**
 * `--capacity 1200` (deliveries/s): the end-to-end capacity that sets the sustained, overload,
 * fairness and accounts scenarios' rates, instead of the one this run measures. Alternated A/B
 * runs then carry the same load; each run measures its own capacity otherwise.
 */
const fixedCapacity = values.capacity === undefined ? undefined : Number(values.capacity);
if (fixedCapacity !== undefined && !(Number.isFinite(fixedCapacity) && fixedCapacity > 0))
  throw new Error(`--capacity must be a positive number of deliveries/s, got ${values.capacity}`);
const size = quick
  ? {
      e2e: 2_000,
      fanOutEvents: 20,
      orderedEvents: 200,
      latencySeconds: 10,
      sustainedSeconds: 10,
      retryEvents: 500,
      apiSeconds: 3,
      apiRounds: 1,
      memoryEvents: 100,
      fairnessSeconds: 10,
      retentionEvents: 25_000,
      historyEvents: 250_000,
      overloadSeconds: 10,
      operatingWarmup: 200,
      operatingSeconds: 5,
      tracingRounds: 1,
    }
  : {
      e2e: 20_000,
      fanOutEvents: 200,
      orderedEvents: 2000,
      latencySeconds: 30,
      sustainedSeconds: 60,
      retryEvents: 5_000,
      apiSeconds: 10,
      apiRounds: 3,
      memoryEvents: 1_000,
      fairnessSeconds: 30,
      retentionEvents: 250_000,
      historyEvents: 2_500_000,
      overloadSeconds: 30,
      operatingWarmup: 2_000,
      operatingSeconds: 20,
      tracingRounds: 3,
    };

/** The row of one fairness variant at `rate` events/s. */
function fairnessRow(rate: number, run: FairnessResult): BenchRow {
  const names: Record<FairnessVariant, string> = {
    hang: '1 of 10 hangs',
    fail: '1 of 10 answers 500',
    'hang-other-account': "another account's hangs",
    'hang-other-account-retried': "another account's hangs, its retries back within the run",
  };
  return {
    scenario: `fairness: ${names[run.variant]}`,
    figure: `${rate} events/s: healthy p50 ${run.faulty.p50Ms.toFixed(0)} ms, p99 ${run.faulty.p99Ms.toFixed(0)} ms; ${run.faulty.arrived} of ${run.faulty.expected} arrived, the last ${(run.faulty.lastArrivalAfterEndMs / 1000).toFixed(1)} s after publishing ended`,
    baseline: `same load without the fault: p50 ${run.pair.p50Ms.toFixed(0)} ms, p99 ${run.pair.p99Ms.toFixed(0)} ms`,
    ratio: run.p99Ratio,
    target: 'p99 ≤ 2× and all within 5 s',
    met: run.met,
  };
}

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

const results: Record<string, unknown> = {};

/** A latency in ms for a table row; a delivery that never arrived makes it infinite. */
const formatLatency = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(0)} ms` : 'not arrived');

/** A step's p50 / p99 for a table row, in ms without the unit. */
const stepFigure = ({ p50Ms, p99Ms }: StepPercentiles) => `${p50Ms.toFixed(0)} / ${p99Ms.toFixed(0)}`;

/** Each step's p50 / p99 of a load's deliveries, for a table row. */
const stepsFigure = (s: StepLatencies) =>
  `p50 / p99 by step: accepted ${stepFigure(s.accepted)}, stored ${stepFigure(s.stored)}, attempted ${stepFigure(s.attempted)}, received ${stepFigure(s.received)} ms`;

/** Seconds of the open-loop flood at 10× the API's capacity. */
const floodSeconds = 10;

/** 300 scans of a 15 MiB string: a few interpreter steps, far past any budget. */
const builtInHog = `function handler(w) {
  const s = 'a'.repeat(15 * 1024 * 1024);
  let n = 0;
  for (let i = 0; i < 300; i++) n += s.indexOf('b');
  return w;
}`;

/** Each scenario runs, keeps its figures in `results` and returns its table rows. */
const scenarios: Record<string, () => Promise<BenchRow[]>> = {
  async throughput() {
    step('transport');
    const transportRun = await transportBaseline(size.e2e, 50);
    const transport = transportRun.postsPerSecond;
    step('transport, node:http');
    const nodeHttp = await transportBaseline(size.e2e, 50, 'node-http');
    step('queue floor');
    const floor = await queueFloorBaseline(size.e2e, 50);
    // Twenty accounts, one subscription each: a multi-tenant load, where the per-subscription
    // limit is not what bounds the worker (one subscription alone gets SUBSCRIPTION_MAX_IN_FLIGHT).
    const e2eLoad = { events: size.e2e, accounts: 20, subscriptions: 1 };
    const e2e = await deliveryThroughput('e2e', e2eLoad, progress);
    const fanOut = await deliveryThroughput(
      'fan-out',
      { events: size.fanOutEvents, accounts: 1, subscriptions: 100 },
      progress,
    );
    // One subscription receiving everything, at the default SUBSCRIPTION_MAX_IN_FLIGHT.
    const hot = await deliveryThroughput(
      'hot',
      { events: size.e2e, accounts: 1, subscriptions: 1 },
      progress,
    );
    Object.assign(results, {
      transport: transportRun,
      nodeHttp,
      floor,
      e2e,
      fanOut,
      hot,
    });
    const clientCpu = transportRun.clientCpuMsPerPost;
    return [
      ratioRow(
        'end-to-end delivery',
        `${e2e.deliveriesPerSecond.toFixed(0)} deliveries/s (${e2e.deliveries})`,
        `${transport.toFixed(0)} POST/s (the worker's client, 50 in flight)`,
        e2e.deliveriesPerSecond / transport,
        0.3,
      ),
      reportedRow(
        "transport: the worker's got client / bare node:http, POSTs/s",
        `${transport.toFixed(0)} POST/s, ${transportRun.clientCpuMsPerPost.toFixed(3)} ms of CPU per POST`,
        `${nodeHttp.postsPerSecond.toFixed(0)} POST/s, ${nodeHttp.clientCpuMsPerPost.toFixed(3)} ms of CPU per POST`,
        transport / nodeHttp.postsPerSecond,
      ),
      reportedRow(
        'queue floor: one BullMQ job per POST',
        `${floor.toFixed(0)} jobs/s (the worker's client, 50 in flight)`,
        `${transport.toFixed(0)} POST/s`,
        floor / transport,
      ),
      ratioRow(
        'end-to-end delivery / queue floor',
        `${e2e.deliveriesPerSecond.toFixed(0)} deliveries/s`,
        `${floor.toFixed(0)} jobs/s`,
        e2e.deliveriesPerSecond / floor,
        0.55,
      ),
      ratioRow(
        'fan-out 1 → 100',
        `${fanOut.deliveriesPerSecond.toFixed(0)} deliveries/s (${fanOut.deliveries})`,
        `${transport.toFixed(0)} POST/s`,
        fanOut.deliveriesPerSecond / transport,
        0.55,
      ),
      ratioRow(
        'hot subscription: one subscription takes the burst / spread over 20',
        `${hot.deliveriesPerSecond.toFixed(0)} deliveries/s (${hot.deliveries}, SUBSCRIPTION_MAX_IN_FLIGHT at its default)`,
        `${e2e.deliveriesPerSecond.toFixed(0)} deliveries/s end to end`,
        hot.deliveriesPerSecond / e2e.deliveriesPerSecond,
        0.8,
      ),
      cpuCostRow('end-to-end, 20 accounts', e2e.cost, clientCpu, 4),
      cpuCostRow('fan-out 1 → 100', fanOut.cost, clientCpu, 2.2),
      cpuCostRow('hot subscription', hot.cost, clientCpu, 5),
      {
        scenario: 'Redis commands per delivery, scripts included: fan-out 1 → 100',
        figure: redisFigure(fanOut.cost),
        baseline: '—',
        ratio: null,
        target: '≤ 25',
        met: fanOut.cost.redisCommands <= 25,
      },
      {
        scenario: 'Redis commands per delivery, scripts included: hot subscription / end-to-end spread',
        figure: redisFigure(hot.cost),
        baseline: redisFigure(e2e.cost),
        ratio: hot.cost.redisCommands / e2e.cost.redisCommands,
        target: '≤ 1.50',
        met: hot.cost.redisCommands / e2e.cost.redisCommands <= 1.5,
      },
    ];
  },
  async operating() {
    const loads = [
      { name: 'operating, 20 accounts', load: { events: size.e2e, accounts: 20, subscriptions: 1 } },
      { name: 'operating, one subscription', load: { events: size.e2e, accounts: 1, subscriptions: 1 } },
    ];
    const runs = [];
    for (const { name, load } of loads)
      runs.push(await operatingPointCost(name, load, size.operatingWarmup, size.operatingSeconds, progress));
    results.operating = runs;
    return runs.flatMap((run, i) =>
      run.points.map((point) => {
        const ratio = point.cost.cpuMs.total / run.saturation.cpuMs.total;
        return {
          scenario: `CPU per delivery at ${point.fraction * 100}% of capacity / at saturation: ${loads[i]!.load.accounts === 1 ? 'one subscription alone' : 'one subscription per event, 20 accounts'}`,
          figure: `${cpuFigure(point.cost)} at ${point.rate} events/s (${point.deliveries} deliveries)`,
          baseline: `${cpuFigure(run.saturation)} at saturation, ${run.capacity.toFixed(0)} deliveries/s`,
          ratio,
          target: '≤ 1.5',
          met: ratio <= 1.5,
        };
      }),
    );
  },
  async latency() {
    const latency = await steadyLatency(200, size.latencySeconds, progress);
    // One subscription at twice the rate: below capacity, but past what 10 in flight carry at once.
    const hot = await steadyLatency(400, size.latencySeconds, progress);
    results.latency = latency;
    results.hotLatency = hot;
    return [
      {
        scenario: 'latency at 200 events/s',
        figure: `p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms`,
        baseline: '—',
        ratio: null,
        target: 'p99 ≤ 20 ms',
        met: latency.p99Ms <= 20,
      },
      {
        scenario: 'latency at 400 events/s, one subscription',
        figure: `p50 ${hot.p50Ms.toFixed(1)} ms, p99 ${hot.p99Ms.toFixed(1)} ms`,
        baseline: '—',
        ratio: null,
        target: 'p99 ≤ 250 ms',
        met: hot.p99Ms <= 250,
      },
    ];
  },
  async sustained() {
    const capacity = await endToEndCapacity();
    const subscriptions = 5;
    const rate = Math.max(1, Math.round((0.7 * capacity) / subscriptions));
    const run = await sustainedLoad(rate, size.sustainedSeconds, subscriptions, progress);
    results.sustained = { ...run, rate, capacity };
    return [
      {
        scenario: `sustained: 70% of end-to-end capacity, ${rate} events/s into ${subscriptions} subscriptions`,
        figure: `p50 ${formatLatency(run.p50Ms)}, p99 ${formatLatency(run.p99Ms)}, max ${formatLatency(run.maxMs)}; ${run.arrived} of ${run.expected} arrived, ${Number.isFinite(run.drainedAfterMs) ? `drained ${(run.drainedAfterMs / 1000).toFixed(1)} s after publishing ended` : `not drained ${sustainedDrainWaitMs / 1000} s after publishing ended`}; the ${sustainedWarmupSeconds} s of warm-up before, not counted: p99 ${formatLatency(run.warmupP99Ms)}`,
        baseline: '—',
        ratio: null,
        target: 'p99 ≤ 250 ms, drained within 2 s',
        met: run.p99Ms <= 250 && run.drainedAfterMs <= 2_000,
      },
    ];
  },
  async overload() {
    const capacity = await endToEndCapacity();
    const rate = Math.round((3 * capacity) / overloadSubscriptions);
    // A backlog bound of about 5 s of deliveries, so that a run of seconds reaches it.
    const run = await overload(rate, size.overloadSeconds, Math.round(5 * capacity), step);
    results.overload = { ...run, capacity };
    const shed = run.statuses['503'] ?? 0;
    const others = Object.entries(run.statuses).filter(([status]) => status !== '202' && status !== '503');
    const expected = run.accepted * overloadSubscriptions;
    return [
      {
        scenario: `overload: 3× capacity through POST /api/events, ${rate} events/s into ${overloadSubscriptions} subscriptions for ${size.overloadSeconds} s`,
        figure:
          `API p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms; ${run.statuses['202'] ?? 0} accepted (202), ${shed} shed (503)` +
          `${others.length > 0 ? `, ${others.map(([status, count]) => `${count} × ${status}`).join(', ')}` : ''}` +
          `${run.errors + run.timeouts > 0 ? `, ${run.errors} errors and ${run.timeouts} timeouts` : ''}; ` +
          `${run.delivered} of the ${expected} deliveries of the ${run.accepted} events stored, ${Number.isFinite(run.drainSeconds) ? `drained ${run.drainSeconds.toFixed(1)} s after the load` : 'not drained in 10 minutes'}`,
        baseline: `${capacity.toFixed(0)} deliveries/s end to end`,
        ratio: null,
        target: 'API p99 ≤ 100 ms, only 202 or 503, every accepted event delivered',
        met:
          run.p99Ms <= 100 &&
          others.length === 0 &&
          run.errors + run.timeouts === 0 &&
          run.delivered >= expected,
      },
    ];
  },
  async retry() {
    const retry = await retryLoad(size.retryEvents, progress);
    results.retry = retry;
    return [
      {
        scenario: 'retry load (50% fail)',
        figure: `${retry.deliveriesPerSecond.toFixed(0)} deliveries/s; ${retry.confirmed} confirmed, ${retry.givenUp} given up after ${retry.maxAttemptsAllowed} attempts, ${retry.lost} lost; max ${retry.maxAttemptsSeen} attempts`,
        baseline: '—',
        ratio: null,
        target: `none lost, ≤ ${retry.maxAttemptsAllowed} attempts`,
        met: retry.lost === 0 && retry.maxAttemptsSeen <= retry.maxAttemptsAllowed,
      },
    ];
  },
  async fairness() {
    const rate = fairnessRate(await endToEndCapacity());
    const runs = await fairness(rate, size.fairnessSeconds, progress);
    results.fairness = runs;
    return runs.map((run) => fairnessRow(rate, run));
  },
  /** The retried cross-account hang alone, for work on the breaker (`fairness` runs it too). */
  async 'fairness-retried'() {
    const rate = fairnessRate(await endToEndCapacity());
    const runs = await fairness(rate, size.fairnessSeconds, progress, ['hang-other-account-retried']);
    return runs.map((run) => fairnessRow(rate, run));
  },
  async accounts() {
    const capacity = await endToEndCapacity();
    const rate = Math.max(1, Math.round((0.25 * capacity) / accountSteadySubscriptions));
    const run = await accountFairness(rate, size.fairnessSeconds, progress);
    results.accounts = run;
    const { flood, alone, withinCapacity } = run;
    const latencies = (r: AccountFloodRun) =>
      `p50 ${r.p50Ms.toFixed(0)} ms, p99 ${r.p99Ms.toFixed(0)} ms (${stepsFigure(r.steps)})`;
    return [
      {
        scenario: 'fairness across accounts: a 300-subscription flood beside a steady account',
        figure: `steady account ${latencies(flood)}; ${flood.arrived} of ${flood.expected} arrived, and ${flood.neighbourArrived} of the flood's ${flood.neighbourExpected}`,
        baseline: `the steady account alone: ${latencies(alone)}`,
        ratio: run.p99Ratio,
        target: 'p99 ≤ 2× and all arrived',
        met: run.met,
      },
      {
        scenario: 'fairness across accounts: the flood against a neighbour within capacity',
        figure: `steady account p99 ${flood.p99Ms.toFixed(0)} ms beside the flood (10 events/s to its 300 subscriptions)`,
        baseline: `beside the same 300 subscriptions at 1 event/s (300 deliveries/s): ${latencies(withinCapacity)}; ${withinCapacity.arrived} of ${withinCapacity.expected} arrived`,
        ratio: run.p99OverNeighbour,
        target: null,
        met: null,
      },
    ];
  },
  async retries() {
    const capacity = await endToEndCapacity();
    const rate = Math.max(1, Math.round((0.25 * capacity) / accountSteadySubscriptions));
    const run = await retryFairness(rate, size.fairnessSeconds, progress);
    results.retries = run;
    const { flood, withinCapacity } = run;
    return [
      {
        scenario:
          'fairness across accounts: a flood whose callbacks fail (100 subscriptions at 10 events/s, 4 attempts each) beside a steady account',
        figure: `steady account p50 ${flood.p50Ms.toFixed(0)} ms, p99 ${flood.p99Ms.toFixed(0)} ms; ${flood.arrived} of ${flood.expected} arrived, and ${flood.neighbourArrived} of the flood's ${flood.neighbourExpected} attempts`,
        baseline: `beside the same failing subscriptions at 1 event/s: p50 ${withinCapacity.p50Ms.toFixed(0)} ms, p99 ${withinCapacity.p99Ms.toFixed(0)} ms; ${withinCapacity.arrived} of ${withinCapacity.expected} arrived`,
        ratio: run.p99Ratio,
        target: 'p99 ≤ 2× and all arrived',
        met: run.met,
      },
    ];
  },
  async spike() {
    const run = await apiSpike(size.overloadSeconds, 20, step);
    results.spike = run;
    const flooded = await flood(Math.round(10 * run.capacity), floodSeconds, step);
    results.flood = flooded;
    const { half, spike } = run;
    const answers = (r: SpikeRun) =>
      `${Object.entries(r.statuses)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')}${r.errors + r.timeouts > 0 ? `, ${r.errors} errors and ${r.timeouts} timeouts` : ''}`;
    const refusals = (r: SpikeRun) => {
      const tries = Object.entries(r.steadyRefused).map(([status, count]) => `${count} × ${status}`);
      return tries.length === 0 ? '' : `; tries refused and retried: ${tries.join(', ')}`;
    };
    return [
      {
        scenario: `API spike: 3× the API's ingest capacity (${run.capacity.toFixed(0)} req/s), ${spike.rate} events/s for ${size.overloadSeconds} s, beside a steady account at 20 events/s`,
        figure: `API p50 ${spike.apiP50Ms} ms, p99 ${spike.apiP99Ms} ms; ${answers(spike)}; steady account p99 ${spike.steadyP99Ms.toFixed(0)} ms (${spike.steadyArrived} of ${spike.steadyExpected}; accepted p99 ${spike.steadyAcceptedP99Ms.toFixed(0)} ms${refusals(spike)}; ${stepsFigure(spike.steadySteps)}); ${spike.delivered} of ${spike.expected} deliveries of accepted events`,
        baseline: `half the capacity, ${half.rate} events/s: API p99 ${half.apiP99Ms} ms (${answers(half)}); steady account p99 ${half.steadyP99Ms.toFixed(0)} ms (accepted p99 ${half.steadyAcceptedP99Ms.toFixed(0)} ms${refusals(half)}; ${stepsFigure(half.steadySteps)})`,
        ratio: run.apiP99Ratio,
        target: 'API p99 ≤ 5×, steady p99 ≤ 2×, only 202/429/503, no timeouts, all delivered',
        met: run.met,
      },
      floodRow(flooded, run.capacity),
      reportedRow(
        "API spike: the steady account's delivery p99 beside the spike / beside half capacity",
        `${spike.steadyP99Ms.toFixed(0)} ms`,
        `${half.steadyP99Ms.toFixed(0)} ms`,
        run.steadyP99Ratio,
      ),
    ];
  },
  async recover() {
    const capacity = await endToEndCapacity();
    const rate = Math.max(1, Math.round((0.25 * capacity) / accountSteadySubscriptions));
    const run = await recoverFairness(rate, size.fairnessSeconds, progress);
    results.recover = run;
    const { flood, withinCapacity } = run;
    return [
      {
        scenario:
          'fairness across accounts: a recover of 10,000 failed deliveries (100 subscriptions, started and sent at the recovery pace) beside a steady account',
        figure: `steady account p50 ${flood.p50Ms.toFixed(0)} ms, p99 ${flood.p99Ms.toFixed(0)} ms; ${flood.arrived} of ${flood.expected} arrived, and ${flood.neighbourArrived} of the ${flood.neighbourExpected} recovered`,
        baseline: `beside the same 10,000 deliveries published live at the recovery's default pace (${recoveryPacePerSecond.toFixed(0)}/s): p50 ${withinCapacity.p50Ms.toFixed(0)} ms, p99 ${withinCapacity.p99Ms.toFixed(0)} ms; ${withinCapacity.arrived} of ${withinCapacity.expected} arrived`,
        ratio: run.p99Ratio,
        target: 'p99 ≤ 2× and all arrived',
        met: run.met,
      },
    ];
  },
  async tracing() {
    const cost = await tracingCost(size.apiSeconds, size.e2e, size.tracingRounds, progress);
    results.tracing = cost;
    return [
      ratioRow(
        'tracing cost: POST /api/events ingest, OTEL on / off',
        `${cost.ingest.on.toFixed(0)} req/s exporting traces over OTLP`,
        `${cost.ingest.off.toFixed(0)} req/s without OTEL_* variables`,
        cost.ingest.ratios.on,
        0.6,
      ),
      ratioRow(
        'tracing cost: end-to-end, OTEL on / off',
        `${cost.endToEnd.on.toFixed(0)} deliveries/s exporting traces over OTLP`,
        `${cost.endToEnd.off.toFixed(0)} deliveries/s without OTEL_* variables`,
        cost.endToEnd.ratios.on,
        0.6,
      ),
      sampledRow(
        'tracing cost: POST /api/events ingest, OTEL on at 1% sampling / off',
        `${cost.ingest.sampled.toFixed(0)} req/s, 1% of traces exported over OTLP`,
        `${cost.ingest.off.toFixed(0)} req/s without OTEL_* variables`,
        cost.ingest.ratios.sampled,
      ),
      sampledRow(
        'tracing cost: end-to-end, OTEL on at 1% sampling / off',
        `${cost.endToEnd.sampled.toFixed(0)} deliveries/s, 1% of traces exported over OTLP`,
        `${cost.endToEnd.off.toFixed(0)} deliveries/s without OTEL_* variables`,
        cost.endToEnd.ratios.sampled,
      ),
    ];
  },
  async catalogue() {
    const cost = await catalogueCost(size.apiSeconds, size.fanOutEvents, progress);
    results.catalogue = cost;
    return [
      reportedRow(
        'schema cost: POST /api/events ingest, data checked against its JSON Schema / no schema',
        `${cost.ingest.schema.toFixed(0)} req/s checked`,
        `${cost.ingest.none.toFixed(0)} req/s of a type without a schema`,
        cost.ingest.schema / cost.ingest.none,
      ),
      reportedRow(
        'filter cost: fan-out 1 → 100, a content filter on every subscription / none',
        `${cost.fanOut.filtered.toFixed(0)} deliveries/s filtered`,
        `${cost.fanOut.unfiltered.toFixed(0)} deliveries/s unfiltered`,
        cost.fanOut.filtered / cost.fanOut.unfiltered,
      ),
    ];
  },
  async transformations() {
    const load = { events: size.fanOutEvents, accounts: 1, subscriptions: 100 };
    const plain = await deliveryThroughput('fan-out plain', load, progress);
    const identity =
      'function handler(webhook) { webhook.payload = { text: JSON.stringify(webhook.payload.data) }; return webhook; }';
    const transformed = await deliveryThroughput(
      'fan-out transformed',
      { ...load, fields: { transformation: identity } },
      progress,
    );
    // The worst case: a function that loops runs its whole budget, on the transformation thread.
    const budgetMs = 50;
    const runner = createTransformationRunner(
      {
        timeoutMs: budgetMs,
        memoryBytes: 16 * 1024 * 1024,
        threads: 1,
        maxOutputBytes: 512 * 1024,
        queueTimeoutMs: 10_000,
        accountConcurrency: 1,
        maxQueue: 16,
      },
      { allowPrivate: false, ports: [[443, 443]], denyCidrs: [] },
    );
    const runs = 20;
    const started = performance.now();
    for (let i = 0; i < runs; i++)
      await runner.run(
        'function handler(w) { for (;;) {} }',
        {
          payload: {},
          headers: {},
          url: 'https://bench.example/hook',
          event_type: 'call.completed',
        },
        'bench',
      );
    const looping = { budgetMs, msPerRun: (performance.now() - started) / runs };
    // Few interpreter steps, each a costly built-in: only the host's deadline stops it.
    const builtInStarted = performance.now();
    for (let i = 0; i < runs; i++)
      await runner.run(
        builtInHog,
        { payload: {}, headers: {}, url: 'https://bench.example/hook', event_type: 'x' },
        'bench',
      );
    const builtIn = { budgetMs, msPerRun: (performance.now() - builtInStarted) / runs };
    await runner.close();
    results.transformations = { plain, transformed, looping, builtIn };
    return [
      reportedRow(
        'transformation cost: fan-out 1 → 100, a transformation on every subscription / none',
        `${transformed.deliveriesPerSecond.toFixed(0)} deliveries/s transformed (QuickJS, one thread)`,
        `${plain.deliveriesPerSecond.toFixed(0)} deliveries/s untransformed`,
        transformed.deliveriesPerSecond / plain.deliveriesPerSecond,
      ),
      reportedRow(
        'transformation worst case: a function that loops, per run / its budget',
        `${looping.msPerRun.toFixed(1)} ms of the transformation thread per run, the attempt failed`,
        `TRANSFORMATION_TIMEOUT_MS ${budgetMs} ms`,
        looping.msPerRun / budgetMs,
      ),
      reportedRow(
        'transformation worst case in built-ins: indexOf over a 15 MiB string, per run / its budget',
        `${builtIn.msPerRun.toFixed(1)} ms of the transformation thread per run, the attempt failed`,
        `TRANSFORMATION_TIMEOUT_MS ${budgetMs} ms`,
        builtIn.msPerRun / budgetMs,
      ),
    ];
  },
  async destinations() {
    const cost = await destinationCost(size.fanOutEvents, progress);
    results.destinations = cost;
    const row = (type: string, run: DeliveryThroughput) =>
      reportedRow(
        `destination cost: fan-out 1 → 100 to ${type} / to HTTP callbacks`,
        `${run.deliveriesPerSecond.toFixed(0)} deliveries/s`,
        `${cost.http.deliveriesPerSecond.toFixed(0)} deliveries/s to the bench's receiver`,
        run.deliveriesPerSecond / cost.http.deliveriesPerSecond,
      );
    // moto's SQS slows as its queue fills (6 writes/s at 5,000 messages): a few events keep the AWS runs short.
    const aws = await awsDestinationCost(Math.max(2, Math.round(size.fanOutEvents / 40)), progress);
    results.awsDestinations = aws;
    const workerMsPerDelivery = (run: DeliveryThroughput) => run.cost.cpuMs.workers;
    const onMoto = (type: string, run: DeliveryThroughput, ceiling: number) => [
      reportedRow(
        `destination cost: fan-out 1 → 100 to ${type} on moto / moto's own ceiling (the SDK writing directly, 50 at once)`,
        `${run.deliveriesPerSecond.toFixed(0)} deliveries/s`,
        `${ceiling.toFixed(0)} writes/s`,
        run.deliveriesPerSecond / ceiling,
      ),
      reportedRow(
        `destination cost: worker CPU per delivery to ${type} / to HTTP callbacks`,
        `${workerMsPerDelivery(run).toFixed(2)} ms`,
        `${workerMsPerDelivery(cost.http).toFixed(2)} ms`,
        workerMsPerDelivery(run) / workerMsPerDelivery(cost.http),
      ),
    ];
    return [
      row('a RabbitMQ exchange, publisher confirms', cost.rabbitmq),
      row('a NATS JetStream subject, acknowledged', cost.nats),
      ...onMoto('an SQS queue', aws.sqs, aws.sqsCeiling),
      ...onMoto('an S3 bucket', aws.s3, aws.s3Ceiling),
    ];
  },
  async ordering() {
    const load = { events: size.orderedEvents, accounts: 1, subscriptions: 1 };
    const unordered = await deliveryThroughput('unordered', load, progress);
    const fifo = await deliveryThroughput('fifo', { ...load, fields: { ordering: 'fifo' } }, progress);
    results.ordering = { unordered, fifo };
    return [
      ratioRow(
        'ordering cost: one subscription, ordering fifo / none',
        `${fifo.deliveriesPerSecond.toFixed(0)} deliveries/s in order, one at a time`,
        `${unordered.deliveriesPerSecond.toFixed(0)} deliveries/s unordered`,
        fifo.deliveriesPerSecond / unordered.deliveriesPerSecond,
        0.4,
      ),
    ];
  },
  async api() {
    const api = await apiThroughput(size.apiSeconds, size.apiRounds, step);
    results.api = api;
    // The median of the rounds, then each round's value in the order measured.
    const perSecond = (median: number, rounds: number[]) =>
      `${median.toFixed(0)} req/s (rounds ${rounds.map((v) => v.toFixed(0)).join(' / ')})`;
    return [
      {
        scenario: 'POST /api/events ingest / bare route',
        figure: perSecond(api.ingest.requestsPerSecond, api.ingest.rounds.measured),
        baseline: `${perSecond(api.ingest.baseline, api.ingest.rounds.baseline)}, bare route`,
        ratio: api.ingest.ratio,
        target: null,
        met: null,
      },
      ratioRow(
        'POST /api/events ingest / fair route',
        perSecond(api.fairIngest.requestsPerSecond, api.fairIngest.rounds.measured),
        `${perSecond(api.fairIngest.baseline, api.fairIngest.rounds.baseline)}, JWT, rate limit, one BullMQ add`,
        api.fairIngest.ratio,
        0.75,
      ),
      ratioRow(
        'GET /api/webhooks/{id}',
        perSecond(api.read.requestsPerSecond, api.read.rounds.measured),
        `${perSecond(api.read.baseline, api.read.rounds.baseline)}, pg route`,
        api.read.ratio,
        0.7,
      ),
    ];
  },
  async retention() {
    const retention = await retentionCost(size.retentionEvents, step);
    results.retention = retention;
    const cost = (c: { seconds: number; walBytes: number }) =>
      `${c.seconds.toFixed(1)} s, ${(c.walBytes / 1_048_576).toFixed(1)} MiB of WAL`;
    return [
      reportedRow(
        `retention of ${retention.attempts.toLocaleString('en-US')} expired attempts: dropping day partitions / deleting rows`,
        cost(retention.partitions),
        `${cost(retention.rows)} (unpartitioned, batches of 1,000 rows)`,
        retention.partitions.seconds / retention.rows.seconds,
      ),
    ];
  },
  async log() {
    const log = await logGrowth(
      { historyEvents: size.historyEvents, e2eEvents: size.e2e, readSeconds: size.apiSeconds },
      progress,
    );
    results.log = log;
    const { empty, grown, unpartitioned } = log;
    const grownBy = `a log of ${grown.attempts.toLocaleString('en-US')} attempts over 30 days`;
    const emptyLog = `${empty.attempts.toLocaleString('en-US')} attempts of the last hour`;
    // The unpartitioned stack measures only end-to-end delivery and ingest, the writes partitioning may slow.
    const measures = [
      { what: 'end-to-end delivery', key: 'e2e', unit: 'deliveries/s', writes: true },
      { what: 'ingest', key: 'ingest', unit: 'requests/s', writes: true },
      { what: 'delivery list, first page', key: 'firstPage', unit: 'requests/s', writes: false },
      {
        what: 'delivery list, page read on from halfway',
        key: 'deepPage',
        unit: 'requests/s',
        writes: false,
      },
      { what: 'delivery by id, with its attempts', key: 'byId', unit: 'requests/s', writes: false },
    ] as const;
    const value = (run: LogRun, key: (typeof measures)[number]['key']) =>
      key === 'e2e' ? run.e2e.deliveriesPerSecond : run[key];
    // The median of the rounds, then each round's value in the order measured.
    const figure = (run: LogRun, { key, unit }: (typeof measures)[number]) =>
      `${value(run, key).toFixed(0)} ${unit} (rounds ${run.rounds[key].map((v) => v.toFixed(0)).join(' / ')})`;
    const compare =
      (label: string, measured: LogRun, baseline: LogRun, target: number) =>
      (measure: (typeof measures)[number]) =>
        ratioRow(
          `${measure.what}: ${label}`,
          figure(measured, measure),
          figure(baseline, measure),
          roundsRatio(measured.rounds[measure.key], baseline.rounds[measure.key]),
          target,
        );
    // What partitioning costs the machine, beside what it costs in rate: CPU per request or
    // delivery moves less with the machine's state than a rate does on two shared cores.
    const cpu = [
      { what: 'ingest: CPU ms per request', key: 'ingestCpuMs' },
      { what: 'end-to-end delivery: CPU ms per delivery', key: 'e2eCpuMs' },
    ] as const;
    const cpuRow = ({ what, key }: (typeof cpu)[number]): BenchRow => {
      const ms = (run: LogRun) =>
        `${percentile(run.rounds[key], 50).toFixed(3)} ms (rounds ${run.rounds[key].map((v) => v.toFixed(3)).join(' / ')})`;
      const ratio = roundsRatio(empty.rounds[key], unpartitioned.rounds[key]);
      return {
        scenario: `${what}, API, worker, Redis and PostgreSQL: delivery log partitioned by day / unpartitioned`,
        figure: ms(empty),
        baseline: ms(unpartitioned),
        ratio,
        target: '≤ 1.05',
        met: ratio <= 1.05,
      };
    };
    return [
      ...measures.map(compare(`${grownBy} / ${emptyLog}`, grown, empty, 0.9)),
      ...measures
        .filter((measure) => measure.writes)
        .map(compare('delivery log partitioned by day / unpartitioned', empty, unpartitioned, 0.95)),
      ...cpu.map(cpuRow),
      partitioningShareRow(empty, unpartitioned),
    ];
  },
  async sharding() {
    const { sharded, unsharded } = await shardedQueues(size.e2e, progress);
    results.sharding = { sharded, unsharded };
    const percent = (run: ClusterRun) =>
      run.commandShares.map((share) => `${(share * 100).toFixed(0)}%`).join(' / ');
    const figure = (run: ClusterRun) =>
      `${run.deliveriesPerSecond.toFixed(0)} deliveries/s (${run.deliveries}); masters' shares of commands ${percent(run)}`;
    const spread = sharded.commandShares.every((share) => share >= 0.2 && share <= 0.47);
    return [
      {
        ...reportedRow(
          'sharded queues on 3 Redis Cluster masters: QUEUE_SHARDS=6 / 1, end-to-end, 100 accounts',
          figure(sharded),
          figure(unsharded),
          sharded.deliveriesPerSecond / unsharded.deliveriesPerSecond,
        ),
        target: 'every master 20-47% of commands',
        met: spread,
      },
    ];
  },
  async path() {
    const path = await pathScenario(quick, fileURLToPath(new URL('../../', import.meta.url)), progress);
    results.path = path.results;
    return path.rows;
  },
  async memory() {
    const memory = await workerMemory(size.memoryEvents, [], (done, total) =>
      progress('memory', done, total),
    );
    results.memory = memory;
    const quarters = memory.rssMiBAtQuarters;
    return [
      {
        scenario: 'worker memory (`node apps/worker/dist/main.js`: pnpm start, bare, the image)',
        figure: `peak ${memory.peakMiB.toFixed(0)} MiB; by quarter ${quarters.map((q) => q.toFixed(0)).join(' / ')} MiB (${memory.deliveries} deliveries)`,
        baseline: '—',
        ratio: null,
        target: '< 256 MiB and flat',
        met: memory.peakMiB < 256 && (quarters[3] ?? 0) <= (quarters[0] ?? 0) * 1.25,
      },
    ];
  },
};

const unknown = only?.filter((name) => !(name in scenarios)) ?? [];
if (unknown.length > 0)
  throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(scenarios).join(', ')}`);
const rows: BenchRow[] = [];
for (const [name, run] of Object.entries(scenarios)) {
  if (only && !only.includes(name)) continue;
  let scenarioRows: BenchRow[];
  try {
    scenarioRows = await run();
  } catch (error) {
    // One scenario's failure is a missed row, not the loss of the run's other figures.
    const message = error instanceof Error ? error.message : String(error);
    scenarioRows = [
      {
        scenario: `${name}: did not finish`,
        figure: message,
        baseline: '—',
        ratio: null,
        target: 'finishes',
        met: false,
      },
    ];
  }
  bar.stop();
  current = '';
  // One line per finished scenario, also when the output is a log file rather than a terminal.
  for (const row of scenarioRows) console.log(formatRow(row));
  rows.push(...scenarioRows);
}
const table = renderTable(rows);

const date = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
const machine = `${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`;
// This file runs as dist/bench/run.js; results go beside the sources, in bench/results.
const resultsDir = new URL('../../bench/results/', import.meta.url);
await mkdir(resultsDir, { recursive: true });
const base = new URL(`${date}${quick ? '-quick' : ''}${only ? `-${only.join('-')}` : ''}`, resultsDir);
await writeFile(
  `${base.pathname}.json`,
  `${JSON.stringify({ date, quick, only: only ?? 'all', fixedCapacity, machine, size, rows, ...results }, null, 2)}\n`,
);
await writeFile(
  `${base.pathname}.md`,
  `# Benchmark ${date}${quick ? ' (quick)' : ''}\n\n${machine}\n\n${table}\n`,
);
console.log(`\n${machine}\n\n${table}\n\nwritten: ${base.pathname}.json and .md`);
process.exit(0);

/** A row whose figure is `ratio` of its baseline, met at `target` or above. */
function ratioRow(
  scenario: string,
  figure: string,
  baseline: string,
  ratio: number,
  target: number,
): BenchRow {
  return { scenario, figure, baseline, ratio, target: `≥ ${target.toFixed(2)}`, met: ratio >= target };
}

/**
 * A row of the CPU one delivery cost every process of the service (cost-probe.ts), against the
 * transport client's CPU per POST; met at `target` times or less (null: reported). The baseline
 * column also gives the deliveries/s one core of each part would carry.
 */
function cpuCostRow(
  load: string,
  cost: DeliveryCost,
  clientCpuMsPerPost: number,
  target: number | null,
): BenchRow {
  const { cpuMs } = cost;
  const perCore = (ms: number) => (ms > 0 ? (1000 / ms).toFixed(0) : '∞');
  const ratio = cpuMs.total / clientCpuMsPerPost;
  return {
    scenario: `CPU per delivery / the transport client's per POST: ${load}`,
    figure:
      `${cpuMs.total.toFixed(2)} ms: API ${cpuMs.api.toFixed(2)}, workers ${cpuMs.workers.toFixed(2)}, ` +
      `Redis ${cpuMs.redis.toFixed(2)}, PostgreSQL ${cpuMs.postgres.toFixed(2)}; PostgreSQL ` +
      `${cost.pgTransactions.toFixed(2)} transactions and ${cost.pgTuplesWritten.toFixed(2)} tuples written ` +
      `(deliveries/s per core: worker ${perCore(cpuMs.workers)}, Redis ${perCore(cpuMs.redis)}, PostgreSQL ${perCore(cpuMs.postgres)})`,
    baseline: `${clientCpuMsPerPost.toFixed(3)} ms per POST`,
    ratio,
    target: target === null ? null : `≤ ${target.toFixed(1)}`,
    met: target === null ? null : ratio <= target,
  };
}

/** A delivery's CPU in ms by process, with its PostgreSQL transactions and Redis commands. */
function cpuFigure(cost: DeliveryCost): string {
  const { cpuMs } = cost;
  return (
    `${cpuMs.total.toFixed(2)} ms (API ${cpuMs.api.toFixed(2)}, workers ${cpuMs.workers.toFixed(2)}, ` +
    `Redis ${cpuMs.redis.toFixed(2)}, PostgreSQL ${cpuMs.postgres.toFixed(2)}; ` +
    `${cost.pgTransactions.toFixed(1)} transactions, ${cost.redisCommands.toFixed(0)} Redis commands)`
  );
}

/** Redis commands per delivery, with the most called. */
function redisFigure(cost: DeliveryCost): string {
  const top = Object.entries(cost.topRedisCommands)
    .slice(0, 5)
    .map(([name, calls]) => `${name} ${calls}`)
    .join(', ');
  return `${cost.redisCommands.toFixed(1)} (${top})`;
}

/**
 * This run's end-to-end deliveries/s: `--capacity` when given, else the throughput scenario's, or
 * measured now (the same load) when it did not run; the sustained, overload, fairness and accounts
 * rates are fractions and multiples of it.
 */
async function endToEndCapacity(): Promise<number> {
  if (fixedCapacity !== undefined) return fixedCapacity;
  const e2e =
    (results.e2e as { deliveriesPerSecond: number } | undefined) ??
    (await deliveryThroughput('e2e', { events: size.e2e, accounts: 20, subscriptions: 1 }, progress));
  results.e2e = e2e;
  return e2e.deliveriesPerSecond;
}

/**
 * The log scenario's row of what partitioning costs a delivery in CPU (`partitioningShare`): met
 * at 5% or less, the bound set on what partitioning may cost a delivery.
 */
function partitioningShareRow(partitioned: LogRun, unpartitioned: LogRun): BenchRow {
  const ms = (run: LogRun) =>
    `PostgreSQL ${percentile(run.rounds.e2ePostgresCpuMs, 50).toFixed(3)} ms of ` +
    `${percentile(run.rounds.e2eCpuMs, 50).toFixed(3)} ms per delivery ` +
    `(PostgreSQL's rounds ${run.rounds.e2ePostgresCpuMs.map((v) => v.toFixed(3)).join(' / ')})`;
  const share = partitioningShare(partitioned.rounds, unpartitioned.rounds);
  return {
    scenario:
      "end-to-end delivery: partitioning's cost, PostgreSQL's CPU per delivery partitioned − unpartitioned, " +
      "as a share of the unpartitioned stack's CPU per delivery of all processes",
    figure: ms(partitioned),
    baseline: ms(unpartitioned),
    ratio: share,
    target: "≤ 0.05 (5% of a delivery's CPU)",
    met: share <= 0.05,
  };
}

/**
 * A row of tracing's cost at the sampling docs/operations.md recommends at volume: met when
 * tracing costs at most a tenth of the rate without it.
 */
function sampledRow(scenario: string, figure: string, baseline: string, ratio: number): BenchRow {
  return { scenario, figure, baseline, ratio, target: '≥ 0.90', met: ratio >= 0.9 };
}

/** A row whose ratio is only reported: it explains a target, it has none of its own. */
/** The open-loop flood's row: `run` at 10× `capacity` (req/s). */
function floodRow(run: FloodRun, capacity: number): BenchRow {
  const firstTries = Object.entries(run.firstTries)
    .map(([outcome, count]) => `${count} × ${outcome}`)
    .join(', ');
  return {
    scenario: `API flood: 10× the API's ingest capacity (${capacity.toFixed(0)} req/s), ${run.rate} publishes/s for ${run.seconds} s, open loop, clients with a 5 s timeout retrying 429, 503 and timeouts 500 ms apart`,
    figure: `${run.started} publishes; first tries ${firstTries}; ${run.tries} tries in all; ${run.accepted.length} accepted, ${run.givenUp} given up; ${run.delivered} of the accepted delivered; API ${run.apiUp ? 'up' : 'down'} after it`,
    baseline: '—',
    ratio: run.accepted.length === 0 ? 0 : run.delivered / run.accepted.length,
    target: 'API up, every first try 202, 429 or 503 within 5 s, every accepted event delivered',
    met: run.met,
  };
}

function reportedRow(scenario: string, figure: string, baseline: string, ratio: number): BenchRow {
  return { scenario, figure, baseline, ratio, target: null, met: null };
}
