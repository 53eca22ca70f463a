/**
 * What tracing costs: `POST /api/events` ingest and end-to-end delivery with the OTEL_* variables
 * set (traces exported over OTLP/HTTP to a local receiver that answers 200, so the export does its
 * full work) against the same without them, in the same run: once with every trace sampled, once
 * at the sampling docs/operations.md recommends at volume ({@link documentedSampling}). The
 * services are started as deployed, with the SDK's `--import` in each case: without the variables
 * it loads nothing. Each load runs in rounds ({@link inRounds}).
 */
import { ingestRate } from './api-scenarios.js';
import { deliveryThroughput, type Progress } from './delivery-scenarios.js';
import { startBareReceiver } from './harness.js';
import { roundsRatio } from './rounds.js';
import { percentile } from '../scripts/lib/stats.js';

/**
 * The sampling docs/operations.md recommends at volume: 1% of the traces a request or an event
 * starts, and every span of a sampled one (the OpenTelemetry SDK's environment variables).
 */
export const documentedSampling = {
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0.01',
};

/** One load's figures, each the median of its rounds, and the rounds' own, in the order measured. */
export interface TracedLoad {
  off: number;
  on: number;
  sampled: number;
  /** on / off and sampled / off: the median of the rounds' ratios, round by round (`roundsRatio`). */
  ratios: { on: number; sampled: number };
  rounds: { off: number[]; on: number[]; sampled: number[] };
}

/**
 * Ingest (requests/s) and end-to-end (deliveries/s) figures with tracing off, on with every trace
 * sampled, and on at the {@link documentedSampling}.
 */
export interface TracingCost {
  ingest: TracedLoad;
  endToEnd: TracedLoad;
}

/**
 * Runs `measure` for the three settings, `rounds` times, the three of a round back to back: one
 * run of each moved by more than the changes it was to show (ratios of 0.65 to 0.83 for the same
 * code in four runs of one afternoon), and a round's ratio cancels the machine's drift between
 * rounds.
 */
async function inRounds(
  rounds: number,
  measure: (setting: 'off' | 'on' | 'sampled') => Promise<number>,
): Promise<TracedLoad> {
  const measured: TracedLoad['rounds'] = { off: [], on: [], sampled: [] };
  for (let round = 0; round < rounds; round++) {
    for (const setting of ['off', 'on', 'sampled'] as const) measured[setting].push(await measure(setting));
  }
  return {
    off: percentile(measured.off, 50),
    on: percentile(measured.on, 50),
    sampled: percentile(measured.sampled, 50),
    ratios: {
      on: roundsRatio(measured.on, measured.off),
      sampled: roundsRatio(measured.sampled, measured.off),
    },
    rounds: measured,
  };
}

/**
 * Runs both loads, each in `rounds` rounds: ingest for `ingestSeconds`, end to end over `events`
 * events in 20 accounts.
 */
export async function tracingCost(
  ingestSeconds: number,
  events: number,
  rounds: number,
  progress: Progress,
): Promise<TracingCost> {
  const collector = await startBareReceiver();
  try {
    const traced = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    };
    const env = { off: {}, on: traced, sampled: { ...traced, ...documentedSampling } };
    const event = { type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } };
    let step = 0;
    const ingest = await inRounds(rounds, (setting) => {
      progress('tracing ingest', step++, rounds * 3);
      return ingestRate('tracing-ingest', ingestSeconds, env[setting], event);
    });
    const e2eLoad = { events, accounts: 20, subscriptions: 1 };
    const endToEnd = await inRounds(
      rounds,
      async (setting) =>
        (await deliveryThroughput(`e2e-tracing-${setting}`, e2eLoad, progress, env[setting]))
          .deliveriesPerSecond,
    );
    return { ingest, endToEnd };
  } finally {
    await collector.close();
  }
}
