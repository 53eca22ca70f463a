/**
 * Flat as the log grows: the same measurements on a stack whose delivery log holds only a recent
 * history, on one that also holds `historyEvents` events with four attempts each spread over the 30
 * days before (generated in SQL, log-fill.ts), and on the first without partitions
 * (unpartitioned-log.ts), for the cost of partitioning:
 * - a subscription's delivery list: its first page, and the page read on (`before`) from the
 *   delivery halfway through its history, in requests/s;
 * - that delivery by id, with its four attempts, in requests/s;
 * - ingest (`POST /api/events`) in requests/s, with no worker running;
 * - end-to-end deliveries/s (delivery-scenarios.ts's `deliverLoad`, 20 accounts with one
 *   subscription each), with one worker per stack.
 * The three stacks run side by side and each measurement takes turns over them in rounds (the
 * unpartitioned stack only for ingest and end to end, the writes partitioning may slow), each round
 * on freshly started and warmed-up services; a stack's figure is the median of its rounds, and one
 * stack against another is the median of their rounds' ratios (`roundsRatio` in rounds.ts). The
 * subscription read receives the whole history: the worst case for its list, since every delivery
 * of the log is in its index range.
 */
import { Queue } from 'bullmq';
import pg from 'pg';
import { createProducerConnection, queueNames, type EventPublisher } from '@webhooks/shared';
import { requestLoad, requestRate, sheddingOff } from './api-scenarios.js';
import { startCostProbe } from './cost-probe.js';
import { deliverLoad, subscribeLoad, type DeliveryThroughput, type Progress } from './delivery-scenarios.js';
import type { Receiver } from '../scripts/lib/receiver.js';
import { subscribe, withBenchStack, type BenchStack } from './harness.js';
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
  /**
   * Each measurement's value in every round, in the order measured (its median is above); and for
   * ingest and end to end, the CPU ms each request or delivery cost the stack's processes (API,
   * worker, Redis, PostgreSQL: cost-probe.ts) in every round; of end to end also the CPU ms per
   * delivery of PostgreSQL alone (`e2ePostgresCpuMs`).
   */
  rounds: Record<
    'firstPage' | 'deepPage' | 'byId' | 'ingest' | 'e2e' | 'ingestCpuMs' | 'e2eCpuMs' | 'e2ePostgresCpuMs',
    number[]
  >;
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

/** A stack whose log is filled, ready to measure. */
interface LogStack {
  tag: string;
  layout: LogLayout;
  /** Attempts in the log when filled (four per event). */
  attempts: number;
  stack: BenchStack;
  publisher: EventPublisher;
  receiver: Receiver;
  /** The API's `authorization` header of the history's account. */
  headers: Record<string, string>;
  /** The read subscription's delivery list. */
  list: string;
  /** The read subscription's delivery halfway through its history. */
  middle: string;
}

/**
 * Runs `run` on a stack with no worker whose log holds `historyEvents` events over the 30 days
 * before the last hour and {@link recentEvents} in the last hour, all delivered to one subscription.
 */
async function withLogStack<T>(
  tag: string,
  layout: LogLayout,
  historyEvents: number,
  progress: Progress,
  run: (log: LogStack) => Promise<T>,
): Promise<T> {
  return withBenchStack(
    {
      tag,
      workers: 0,
      // Shedding off: ingest at 50 connections measures what the API processes, and a slow
      // machine's shed requests would end the run (requestLoad refuses non-2xx answers).
      env: { LOG_LEVEL: 'error', RETENTION_DAYS: String(historyDays * 2), ...sheddingOff },
      prepareDatabase: layout === 'unpartitioned' ? toUnpartitionedLog : undefined,
    },
    async (stack, publisher, receiver) => {
      progress(`${tag}: filling`, 0, 1);
      const [subscriptionId] = await subscribe(stack, 'history', `${receiver.url}/hook`);
      const db = new pg.Client({ connectionString: stack.databaseUrl });
      await db.connect();
      let middle: string;
      try {
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
      return run({
        tag,
        layout,
        attempts: (historyEvents + recentEvents) * 4,
        stack,
        publisher,
        receiver,
        headers: { authorization: `Bearer ${stack.token('history')}` },
        list: `${stack.apiUrl}/api/webhooks/${subscriptionId}/deliveries`,
        middle,
      });
    },
  );
}

/** Seconds of a read's warm-up, before each round. */
const warmUpSeconds = 1;

/**
 * Seconds of ingest's warm-up, before each round: a fresh API's first seconds of ingest run on
 * code still being compiled. After 1 s of warm-up, 3 s rounds ranged 1,106-2,578 requests/s where
 * warmed processes ingest 2,700-3,200, and grown / recent read 0.83 although ingest never reads
 * the log; after 3 s, rounds ranged 2,918-4,184 requests/s and the ratio read 0.95-0.98 in four runs.
 */
const ingestWarmUpSeconds = 3;

/**
 * Rounds of each read; a stack's figure is the median of its rounds. The reads are held to 10%
 * and measured by the run's full seconds each round.
 */
const readRounds = 5;

/**
 * Rounds of ingest and of end-to-end delivery, each a short load on fresh services: the
 * partitioned / plain ratio is held to 5%, and one load's figure moves by 10-20% with the
 * machine's state and the process's own speed. Three identical stacks measured this way, nine
 * rounds of 3 s of ingest each, spent 0.499-0.505 ms of CPU per request; with one process each
 * for the whole scenario, 0.40-0.48 ms, and five rounds of 10 s read partitioned / plain ingest
 * 0.83-0.89 in three full runs although ingest never touches the log.
 */
const writeRounds = 11;

/** Seconds of ingest in each of its rounds (at most the run's `readSeconds`). */
const ingestRoundSeconds = 3;

/** The end-to-end load of each round, as a fraction of the run's `e2eEvents`; its warm-up, a fifth of that. */
const e2eRoundShare = 1 / 4;

/** A stack's figure from its rounds: the median round, and every round in the order measured. */
interface Rounds<T> {
  median: T;
  figures: T[];
}

/**
 * `measure` on every stack, `rounds` times, the stacks' order rotated each round so that none is
 * always measured first or last; each stack's rounds, in `logs`' order. Each measurement runs on
 * fresh services (`BenchStack.restartServices`: a process keeps its own speed for its lifetime,
 * so one process per stack would compare two processes' luck, not two logs), after `warmUp`,
 * which is not measured: a fresh process runs its first requests on code not yet compiled.
 */
async function inRounds<T>(
  logs: readonly LogStack[],
  rounds: number,
  measure: (log: LogStack, round: number) => Promise<T>,
  value: (figure: T) => number,
  warmUp: (log: LogStack) => Promise<unknown>,
): Promise<Array<Rounds<T>>> {
  const figures = logs.map((): T[] => []);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < logs.length; i++) {
      const index = (i + round) % logs.length;
      const log = logs[index]!;
      await log.stack.restartServices();
      await warmUp(log);
      figures[index]!.push(await measure(log, round));
    }
  }
  return figures.map((list) => ({
    median: [...list].sort((a, b) => value(a) - value(b))[Math.floor(list.length / 2)]!,
    figures: list,
  }));
}

/**
 * Drops the events `log`'s ingest load queued: they are not the run's deliveries, and left queued
 * they would reach BACKLOG_MAX_EVENTS over the rounds and be refused.
 */
async function dropQueuedEvents(log: LogStack): Promise<void> {
  const connection = createProducerConnection(log.stack.redisUrl);
  const events = new Queue(queueNames.events, { connection, prefix: log.stack.prefix });
  try {
    await events.obliterate({ force: true });
  } finally {
    await events.close();
    connection.disconnect();
  }
}

/**
 * The three stacks, empty, grown by `size.historyEvents` (× 4 attempts) and empty unpartitioned,
 * alive together and measured in turn, in rounds ({@link readRounds}, {@link writeRounds}): the machine's
 * drift over the scenario (a fill of several GiB written back, other load) then weighs on every
 * stack alike instead of on the one measured last.
 */
export async function logGrowth(size: LogGrowthSize, progress: Progress): Promise<LogGrowthResult> {
  const seconds = size.readSeconds;
  const e2eLoad = { events: size.e2eEvents, accounts: 20, subscriptions: 1 };
  /** Requests/s of the history account's GETs of `url`, for `duration` s (default: the run's). */
  const reads =
    (url: (log: LogStack) => string, duration = seconds) =>
    (log: LogStack) =>
      requestRate(url(log), duration, { headers: log.headers });
  /**
   * `POST /api/events` on `log`'s stack for `duration` s: requests/s, and CPU ms per request of
   * the stack's processes. Drops what it queued. The warm-ups run it too, cost probe and its 1.5 s
   * wait included: that wait is part of the conditions the committed runs measured.
   */
  const ingest = async (log: LogStack, duration: number) => {
    const probe = await startCostProbe(log.stack);
    const load = await requestLoad(`${log.stack.apiUrl}/api/events`, duration, {
      method: 'POST',
      headers: { ...log.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } }),
    });
    const cost = await probe.stop(load.requests);
    await dropQueuedEvents(log);
    return { perSecond: load.perSecond, cpuMs: cost.cpuMs.total };
  };
  return withLogStack('log_empty', 'partitioned', 0, progress, (empty) =>
    withLogStack('log_plain', 'unpartitioned', 0, progress, (plain) =>
      withLogStack('log_grown', 'partitioned', size.historyEvents, progress, async (grown) => {
        const read = [empty, grown];
        progress('log: reads', 0, 1);
        const inReadRounds = (url: (log: LogStack) => string) =>
          inRounds(read, readRounds, reads(url), Number, reads(url, warmUpSeconds));
        const firstPage = await inReadRounds((log) => log.list);
        const deepPage = await inReadRounds((log) => `${log.list}?before=${log.middle}`);
        const byId = await inReadRounds((log) => `${log.list}/${log.middle}`);
        const all = [empty, grown, plain];
        progress('log: ingest', 0, 1);
        const ingestSeconds = Math.min(seconds, ingestRoundSeconds);
        const ingestRate = (load: { perSecond: number }) => load.perSecond;
        const ingested = await inRounds(
          all,
          writeRounds,
          (log) => ingest(log, ingestSeconds),
          ingestRate,
          (log) => ingest(log, ingestWarmUpSeconds),
        );
        // Started here, restarted fresh by every round.
        for (const log of all) log.stack.addWorker();
        const accounts = await Promise.all(all.map((log) => subscribeLoad(log.stack, log.receiver, e2eLoad)));
        const deliver = (log: LogStack, name: string, events: number) =>
          deliverLoad(
            `${log.tag}: ${name}`,
            log.stack,
            log.publisher,
            accounts[all.indexOf(log)]!,
            { ...e2eLoad, events },
            progress,
          );
        const roundEvents = Math.ceil(e2eLoad.events * e2eRoundShare);
        const e2eRate = (run: DeliveryThroughput) => run.deliveriesPerSecond;
        const e2e = await inRounds(
          all,
          writeRounds,
          (log, round) => deliver(log, `end to end, round ${round + 1}`, roundEvents),
          e2eRate,
          (log) => deliver(log, 'end to end, warm-up', Math.ceil(roundEvents / 5)),
        );
        const figures = (log: LogStack, i: number): LogRun => ({
          layout: log.layout,
          attempts: log.attempts,
          firstPage: firstPage[i]?.median ?? Number.NaN,
          deepPage: deepPage[i]?.median ?? Number.NaN,
          byId: byId[i]?.median ?? Number.NaN,
          ingest: ingested[i]!.median.perSecond,
          e2e: e2e[i]!.median,
          rounds: {
            firstPage: firstPage[i]?.figures ?? [],
            deepPage: deepPage[i]?.figures ?? [],
            byId: byId[i]?.figures ?? [],
            ingest: ingested[i]!.figures.map(ingestRate),
            e2e: e2e[i]!.figures.map(e2eRate),
            ingestCpuMs: ingested[i]!.figures.map((load) => load.cpuMs),
            e2eCpuMs: e2e[i]!.figures.map((run) => run.cost.cpuMs.total),
            e2ePostgresCpuMs: e2e[i]!.figures.map((run) => run.cost.cpuMs.postgres),
          },
        });
        return { empty: figures(empty, 0), grown: figures(grown, 1), unpartitioned: figures(plain, 2) };
      }),
    ),
  );
}
