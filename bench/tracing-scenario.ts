/**
 * What tracing costs: `POST /api/events` ingest and end-to-end delivery with the OTEL_* variables
 * set (traces exported over OTLP/HTTP to a local receiver that answers 200, so the export does its
 * full work) against the same without them, in the same run. The services are started as deployed,
 * with the SDK's `--import` in both cases: without the variables it loads nothing.
 */
import { ingestRate } from './api-scenarios.js';
import { deliveryThroughput, type Progress } from './delivery-scenarios.js';
import { startBareReceiver } from './harness.js';

/** Ingest and end-to-end figures with tracing off and on. */
export interface TracingCost {
  ingest: { off: number; on: number };
  endToEnd: { off: number; on: number };
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
    progress('tracing ingest', 0, 2);
    const event = { type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } };
    const ingestOff = await ingestRate('tracing-ingest', ingestSeconds, {}, event);
    progress('tracing ingest', 1, 2);
    const ingestOn = await ingestRate('tracing-ingest', ingestSeconds, traced, event);
    const e2eLoad = { events, accounts: 20, subscriptions: 1 };
    const off = await deliveryThroughput('e2e-untraced', e2eLoad, progress);
    const on = await deliveryThroughput('e2e-traced', e2eLoad, progress, traced);
    return {
      ingest: { off: ingestOff, on: ingestOn },
      endToEnd: { off: off.deliveriesPerSecond, on: on.deliveriesPerSecond },
    };
  } finally {
    await collector.close();
  }
}
