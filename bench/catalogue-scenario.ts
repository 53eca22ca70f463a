/**
 * What the catalogue's checks cost: `POST /api/events` ingest of an event its type's JSON Schema
 * checks (bench/catalogue.yaml: required fields, types, patterns, an enum) against the same event
 * of a type without a schema; and a fan-out of 1 → 100 with a content filter on every
 * subscription (which every event matches, so the deliveries are the same) against none.
 * The ingest pair runs twice, alternated, and each side is the mean of its two runs.
 */
import { ingestRate } from './api-scenarios.js';
import { deliveryThroughput, type Progress } from './delivery-scenarios.js';

/** The benchmarks' catalogue file. */
const benchCatalogue = 'bench/catalogue.yaml';

/** Ingest and fan-out figures with and without the checks. */
export interface CatalogueCost {
  ingest: { schema: number; none: number };
  fanOut: { filtered: number; unfiltered: number };
}

/** Runs both pairs: ingest for `ingestSeconds`, fan-out of `events` events to 100 subscriptions. */
export async function catalogueCost(
  ingestSeconds: number,
  events: number,
  progress: Progress,
): Promise<CatalogueCost> {
  const env = { EVENT_CATALOGUE: benchCatalogue };
  const data = {
    call_id: 'c-1',
    from: '+14155550100',
    to: '+14155550199',
    direction: 'inbound',
    duration_seconds: 42,
  };
  // Alternated twice and averaged: the second of two runs tends to be the faster one.
  const rates = { none: [] as number[], schema: [] as number[] };
  for (let round = 0; round < 2; round++) {
    progress('schema ingest', round, 2);
    rates.none.push(
      await ingestRate('catalogue-ingest', ingestSeconds, env, { type: 'call.unchecked', data }),
    );
    rates.schema.push(
      await ingestRate('catalogue-ingest', ingestSeconds, env, { type: 'call.checked', data }),
    );
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const [schema, none] = [mean(rates.schema), mean(rates.none)];
  const fanOutLoad = { events, accounts: 1, subscriptions: 100 };
  const unfiltered = await deliveryThroughput('fan-out-unfiltered', fanOutLoad, progress);
  const filtered = await deliveryThroughput(
    'fan-out-filtered',
    // Every event published by the benchmarks has a numeric `n`; the filter reads two fields.
    { ...fanOutLoad, fields: { filter: { 'data.n': { $gte: 0 }, 'data.note': { $in: ['bench'] } } } },
    progress,
  );
  return {
    ingest: { schema, none },
    fanOut: { filtered: filtered.deliveriesPerSecond, unfiltered: unfiltered.deliveriesPerSecond },
  };
}
