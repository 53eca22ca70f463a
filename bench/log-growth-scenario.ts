/**
 * Flat as the log grows: the same measurements on a stack whose delivery log holds only a recent
 * history, on one that also holds `historyEvents` events with four attempts each spread over the 30
 * days before (generated in SQL, log-fill.ts), and on the first without partitions
 * (unpartitioned-log.ts), for the cost of partitioning:
 * - a subscription's delivery list: its first page, and the page read on (`before`) from the
 *   delivery halfway through its history, in requests/s;
 * - that delivery by id, with its four attempts, in requests/s;
 * - ingest (`POST /api/events`) in requests/s, with no worker running;
 * - end-to-end deliveries/s (delivery-scenarios.ts's `measureDeliveries`, 20 accounts with one
 *   subscription each), with one worker.
 * The subscription read receives the whole history: the worst case for its list, since every
 * delivery of the log is in its index range.
 */
import { Queue } from 'bullmq';
import pg from 'pg';
import { createProducerConnection, queueNames } from '@webhooks/shared';
import { waitFor } from '../scripts/lib/wait.js';
import { requestRate } from './api-scenarios.js';
import { measureDeliveries, type DeliveryThroughput, type Progress } from './delivery-scenarios.js';
import { subscribe, withBenchStack } from './harness.js';
import { createPastPartitions, derivedDeliveryId, fillLog } from './log-fill.js';
import { toUnpartitionedLog } from './unpartitioned-log.js';

const minuteMs = 60_000;
const hourMs = 60 * minuteMs;
const dayMs = 24 * hourMs;
/** Days the history is spread over; retention is set past it, so the worker keeps it all. */
const historyDays = 30;
/** The read subscription's deliveries in the last hour, in every run: the empty log's deep page. */
const recentEvents = 20_000;

/** The delivery log's layout of a run. */
export type LogLayout = 'partitioned' | 'unpartitioned';

/** One run's figures; reads and ingest in requests/s. */
export interface LogRun {
  layout: LogLayout;
  /** Attempts in the log when measured (four per event). */
  attempts: number;
  firstPage: number;
  deepPage: number;
  byId: number;
  ingest: number;
  e2e: DeliveryThroughput;
}

/** The three runs. */
export interface LogGrowthResult {
  empty: LogRun;
  grown: LogRun;
  unpartitioned: LogRun;
}

/** What a run measures: events of the end-to-end load, and seconds of each request load. */
export interface LogGrowthSize {
  historyEvents: number;
  e2eEvents: number;
  readSeconds: number;
}

async function logRun(
  tag: string,
  layout: LogLayout,
  historyEvents: number,
  size: LogGrowthSize,
  progress: Progress,
): Promise<LogRun> {
  const step = (name: string) => progress(`${tag}: ${name}`, 0, 1);
  return withBenchStack(
    {
      tag,
      workers: 0,
      env: { LOG_LEVEL: 'error', RETENTION_DAYS: String(historyDays * 2) },
      prepareDatabase: layout === 'unpartitioned' ? toUnpartitionedLog : undefined,
    },
    async (stack, publisher, receiver) => {
      const [subscriptionId] = await subscribe(stack, 'history', `${receiver.url}/hook`);
      const db = new pg.Client({ connectionString: stack.databaseUrl });
      await db.connect();
      let middle: string;
      try {
        step('filling');
        if (layout === 'partitioned') await createPastPartitions(db, historyDays + 1);
        const now = Date.now();
        const log = {
          accountId: 'history',
          subscriptionId: subscriptionId!,
          deliveryIdSql: derivedDeliveryId,
        };
        if (historyEvents > 0) {
          await fillLog(db, {
            ...log,
            count: historyEvents,
            fromMs: now - historyDays * dayMs,
            toMs: now - hourMs,
          });
        }
        await fillLog(db, { ...log, count: recentEvents, fromMs: now - hourMs, toMs: now - minuteMs });
        // Settled before measuring: statistics, visibility, and the fill's dirty pages written out.
        await db.query('VACUUM ANALYZE');
        await db.query('CHECKPOINT');
        const { rows } = await db.query<{ id: string }>(
          'SELECT id::text FROM deliveries WHERE subscription_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1',
          [subscriptionId, Math.floor((historyEvents + recentEvents) / 2)],
        );
        middle = rows[0]!.id;
      } finally {
        await db.end();
      }

      const headers = { authorization: `Bearer ${stack.token('history')}` };
      const list = `${stack.apiUrl}/api/webhooks/${subscriptionId}/deliveries`;
      step('first page');
      const firstPage = await requestRate(list, size.readSeconds, { headers });
      step('deep page');
      const deepPage = await requestRate(`${list}?before=${middle}`, size.readSeconds, { headers });
      step('by id');
      const byId = await requestRate(`${list}/${middle}`, size.readSeconds, { headers });
      step('ingest');
      const ingest = await requestRate(`${stack.apiUrl}/api/events`, size.readSeconds, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } }),
      });

      // The ingested events are not this run's deliveries: dropped before a worker starts.
      const connection = createProducerConnection(stack.redisUrl);
      const events = new Queue(queueNames.events, { connection, prefix: stack.prefix });
      try {
        await events.obliterate({ force: true });
        stack.addWorker();
        await waitFor('the worker', async () => (await events.getWorkersCount()) > 0, 30_000);
      } finally {
        await events.close();
        connection.disconnect();
      }
      const e2e = await measureDeliveries(
        `${tag}: end to end`,
        stack,
        publisher,
        receiver,
        { events: size.e2eEvents, accounts: 20, subscriptions: 1 },
        progress,
      );
      return { layout, attempts: (historyEvents + recentEvents) * 4, firstPage, deepPage, byId, ingest, e2e };
    },
  );
}

/** The three runs: empty, grown by `size.historyEvents` (× 4 attempts), and empty unpartitioned. */
export async function logGrowth(size: LogGrowthSize, progress: Progress): Promise<LogGrowthResult> {
  const empty = await logRun('log_empty', 'partitioned', 0, size, progress);
  const unpartitioned = await logRun('log_plain', 'unpartitioned', 0, size, progress);
  const grown = await logRun('log_grown', 'partitioned', size.historyEvents, size, progress);
  return { empty, grown, unpartitioned };
}
