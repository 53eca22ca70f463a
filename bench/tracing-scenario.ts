/**
 * What tracing costs: `POST /api/events` ingest and end-to-end delivery with the OTEL_* variables
 * set (traces exported over OTLP/HTTP to a local receiver that answers 200, so the export does its
 * full work) against the same without them, in the same run: once with every trace sampled, once
 * at the sampling docs/operations.md recommends at volume ({@link documentedSampling}). The
 * services are started as deployed, with the SDK's `--import` in each case: without the variables
 * it loads nothing.
 */
import { ingestRate } from './api-scenarios.js';
import { deliveryThroughput, type Progress } from './delivery-scenarios.js';
import { startBareReceiver } from './harness.js';

/**
 * The sampling docs/operations.md recommends at volume: 1% of the traces a request or an event
 * starts, and every span of a sampled one (the OpenTelemetry SDK's environment variables).
 */
export const documentedSampling = {
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0.01',
};

/**
 * Ingest (requests/s) and end-to-end (deliveries/s) figures with tracing off, on with every trace
 * sampled, and on at the {@link documentedSampling}.
 */
export interface TracingCost {
  ingest: { off: number; on: number; sampled: number };
  endToEnd: { off: number; on: number; sampled: number };
}

/** Runs both pairs: ingest for `ingestSeconds`, end-to-end over `events` events in 20 accounts. */
export async function tracingCost(
  ingestSeconds: number,
  events: number,
  progress: Progress,
): Promise<TracingCost> {
  const collector = await startBareReceiver();
  try {
    const traced = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    };
    const sampled = { ...traced, ...documentedSampling };
    progress('tracing ingest', 0, 3);
    const event = { type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } };
    const ingestOff = await ingestRate('tracing-ingest', ingestSeconds, {}, event);
    progress('tracing ingest', 1, 3);
    const ingestOn = await ingestRate('tracing-ingest', ingestSeconds, traced, event);
    progress('tracing ingest', 2, 3);
    const ingestSampled = await ingestRate('tracing-ingest', ingestSeconds, sampled, event);
    const e2eLoad = { events, accounts: 20, subscriptions: 1 };
    const off = await deliveryThroughput('e2e-untraced', e2eLoad, progress);
    const on = await deliveryThroughput('e2e-traced', e2eLoad, progress, traced);
    const sampledRun = await deliveryThroughput('e2e-sampled', e2eLoad, progress, sampled);
    return {
      ingest: { off: ingestOff, on: ingestOn, sampled: ingestSampled },
      endToEnd: {
        off: off.deliveriesPerSecond,
        on: on.deliveriesPerSecond,
        sampled: sampledRun.deliveriesPerSecond,
      },
    };
  } finally {
    await collector.close();
  }
}
