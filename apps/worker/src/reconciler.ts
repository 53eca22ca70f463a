/**
 * Re-drives what an outage, crash or lost write left without a job: a `pending` delivery past
 * `next_attempt_at` and a grace period with no live job (FIFO: the head only), a failed fan-out, a
 * notice stored without its job, a `cli` subscription whose stream is gone. Every shard, drained
 * ones included; one BullMQ job scheduler, once per interval across workers; idempotent.
 */
import type { Queue } from 'bullmq';
import type { DeliveryJobData, RedisConnection } from '@webhooks/shared';
import type { Logger } from 'pino';
import { Prisma, type PrismaClient } from '@webhooks/db';
import type { WorkerMetrics } from './metrics.js';
import { noticeEvent, type StoredNotice } from './delivery/attempt-record.js';
import { isFifoHeadSql } from './delivery/fifo-head.js';
import type { ShardedQueues, ShardQueues } from './shard-queues.js';
import {
  deliveryJobId,
  finishedJobRetention,
  firstIdAt,
  layoutOf,
  operationalTypes,
  dropRelaySession,
  relayKeys,
  relaySession,
} from '@webhooks/shared';

export interface ReconcilerDeps {
  prisma: PrismaClient;
  /** The connection of the queues below, to check many jobs in one pipeline per shard. */
  redis: RedisConnection;
  /** Every shard's queues and scheduler (whose first rounds waiting for a turn are not stranded). */
  shards: ReadonlyArray<Pick<ShardQueues, 'deliveries' | 'events' | 'scheduler'>>;
  /** Adds re-created jobs, each to its subscription's shard. */
  addDeliveries: ShardedQueues['addDeliveries'];
  /** Adds notices' fan-out jobs again (`noticeJob`), each to its account's shard. */
  addNotices: ShardedQueues['addNotices'];
  /** DELIVERY_MAX_ATTEMPTS, for the jobs it re-creates. */
  maxAttempts: number;
  /** RECONCILE_GRACE_MS: how far past its `next_attempt_at` a pending delivery must be, in ms. */
  graceMs: number;
  /** QUEUE_PREFIX (unsharded) of the relay's keys, and LISTEN_ABANDONED_MS. */
  relay: { prefix: string; abandonedMs: number };
  log: Logger;
  metrics: Pick<WorkerMetrics, 'redriven'>;
}

/** What one run re-drove. */
export interface ReconcileReport {
  /** Pending deliveries whose job was re-created. */
  deliveries: number;
  /** Failed fan-out jobs retried. */
  fanOuts: number;
  /** Operational notices published again. */
  notices: number;
  /** `webhooks listen` subscriptions deleted, their stream gone longer than LISTEN_ABANDONED_MS. */
  listeners: number;
}

/** How far back notices without a fan-out are looked for (ms): completed fan-out jobs' retention, to tell them apart. */
const noticeLookbackMs = finishedJobRetention.completed.age * 1000;

/** Rows read per query, and job checks per Redis pipeline. */
const pageSize = 1_000;

type Pending = {
  event_id: string;
  subscription_id: string;
  account_id: string;
  round: number;
  next_attempt_at: Date;
  id: string;
};

/** Creates one run of the reconciler; each call scans everything once and reports what it re-drove. */
export function createReconciler(deps: ReconcilerDeps): () => Promise<ReconcileReport> {
  /** `rows`' jobs not alive: missing (a completed delivery job is removed) or failed, and not held by the scheduler. */
  const stranded = async (pending: Pending[]) => {
    const firstRounds = pending.filter((row) => row.round === 0);
    const held = new Set<string>();
    for (const { scheduler } of deps.shards) {
      const holds = await scheduler.holds(
        firstRounds.map((row) => ({ eventId: row.event_id, subscriptionId: row.subscription_id })),
      );
      for (const [i, row] of firstRounds.entries()) if (holds[i]) held.add(row.id);
    }
    const rows = pending.filter((row) => !held.has(row.id));
    const found = rows.map(() => ({ alive: false, failedIn: [] as Array<Queue<DeliveryJobData>> }));
    // One pipeline per shard: a Cluster runs a pipeline only when its keys share a node.
    for (const { deliveries } of deps.shards) {
      const layout = layoutOf(deliveries);
      const pipeline = deps.redis.pipeline();
      for (const row of rows) {
        const id = deliveryJobId(row.event_id, row.subscription_id, row.round);
        pipeline.exists(layout.job(id));
        pipeline.zscore(layout.failed, id);
      }
      const answers = (await pipeline.exec()) ?? [];
      for (const [i, state] of found.entries()) {
        const [exists, failed] = answers
          .slice(2 * i, 2 * i + 2)
          .map(([error, value]: [Error | null, unknown]) => {
            if (error) throw error;
            return value;
          });
        if (exists !== 1) continue;
        if (failed === null) state.alive = true;
        else state.failedIn.push(deliveries);
      }
    }
    // Alive when some shard holds a job that has not failed; else every failed one is replaced.
    return rows.map((row, i) => ({ row, ...found[i]! })).filter(({ alive }) => !alive);
  };

  /** Those of `lost` still pending in the same round (not recorded and ended between the two reads). */
  const stillPending = async <T extends { row: Pending }>(lost: T[]): Promise<T[]> => {
    if (lost.length === 0) return lost;
    const rows = await deps.prisma.$queryRaw<Array<{ id: string; round: number }>>`
      SELECT id::text, round FROM deliveries
      WHERE id = ANY(${lost.map(({ row }) => row.id)}::uuid[]) AND status = 'pending'`;
    const rounds = new Map(rows.map((row) => [row.id, row.round]));
    return lost.filter(({ row }) => rounds.get(row.id) === row.round);
  };

  const fifoHead = Prisma.raw(isFifoHeadSql('d'));
  const redriveDeliveries = async (): Promise<number> => {
    let redriven = 0;
    let after = { at: new Date(0), id: '00000000-0000-0000-0000-000000000000' };
    for (;;) {
      const rows = await deps.prisma.$queryRaw<Pending[]>`
        SELECT d.id::text, d.event_id::text, d.subscription_id::text, s.account_id, d.round, d.next_attempt_at
        FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
        WHERE d.status = 'pending'
          AND d.next_attempt_at < now() - make_interval(secs => ${deps.graceMs / 1000})
          AND (d.next_attempt_at, d.id) > (${after.at}, ${after.id}::uuid)
          -- A FIFO subscription's later deliveries have no job by design: only its head is stranded.
          AND (s.ordering <> 'fifo' OR ${fifoHead})
        ORDER BY d.next_attempt_at, d.id
        LIMIT ${pageSize}`;
      if (rows.length === 0) return redriven;
      const lost = await stillPending(await stranded(rows));
      for (const { row, failedIn } of lost) {
        for (const deliveries of failedIn)
          await deliveries.remove(deliveryJobId(row.event_id, row.subscription_id, row.round));
      }
      if (lost.length > 0) {
        await deps.addDeliveries(
          lost.map(({ row }) => ({
            eventId: row.event_id,
            subscriptionId: row.subscription_id,
            accountId: row.account_id,
            round: row.round,
          })),
          deps.maxAttempts,
        );
        redriven += lost.length;
      }
      const last = rows[rows.length - 1]!;
      after = { at: last.next_attempt_at, id: last.id };
      if (rows.length < pageSize) return redriven;
    }
  };

  const retryFanOuts = async (): Promise<number> => {
    let retried = 0;
    for (const { events } of deps.shards) {
      for (;;) {
        const failed = await events.getFailed(0, pageSize - 1);
        for (const job of failed) await job.retry('failed', { resetAttemptsMade: true });
        retried += failed.length;
        if (failed.length < pageSize) break;
      }
    }
    return retried;
  };

  const republishNotices = async (): Promise<number> => {
    const rows = await deps.prisma.$queryRaw<StoredNotice[]>`
      SELECT e.id::text, e.account_id, e.type, e.data, e.occurred_at FROM events e
      WHERE e.type = ANY(${[...operationalTypes]}::text[])
        AND e.id >= ${firstIdAt(new Date(Date.now() - noticeLookbackMs))}::uuid
        AND e.created_at < now() - make_interval(secs => ${deps.graceMs / 1000})
        AND e.payload_expunged_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
      ORDER BY e.id
      LIMIT ${pageSize}`;
    if (rows.length === 0) return 0;
    const alive = new Set<string>();
    for (const { events } of deps.shards) {
      const layout = layoutOf(events);
      const pipeline = deps.redis.pipeline();
      for (const row of rows) pipeline.exists(layout.job(row.id));
      const answers = (await pipeline.exec()) ?? [];
      for (const [i, [error, exists]] of answers.entries()) {
        if (error) throw error;
        if (exists === 1) alive.add(rows[i]!.id);
      }
    }
    const lost = rows.filter((row) => !alive.has(row.id));
    if (lost.length > 0) await deps.addNotices(lost.map(noticeEvent));
    return lost.length;
  };

  /** Deletes the cli subscriptions older than LISTEN_ABANDONED_MS whose session no stream read since. */
  const sweepListeners = async (): Promise<number> => {
    const { prefix, abandonedMs } = deps.relay;
    const rows = await deps.prisma.$queryRaw<Array<{ id: string; callback_url: string }>>`
      SELECT id::text, callback_url FROM subscriptions
      WHERE callback_url LIKE 'cli://%' AND created_at < now() - make_interval(secs => ${abandonedMs / 1000})
      LIMIT ${pageSize}`;
    const abandoned: Array<{ id: string; session: string }> = [];
    for (const row of rows) {
      const session = relaySession(row.callback_url);
      if (session !== null && (await deps.redis.exists(relayKeys(prefix, session).alive)) === 0)
        abandoned.push({ id: row.id, session });
    }
    if (abandoned.length === 0) return 0;
    const { count } = await deps.prisma.subscription.deleteMany({
      where: { id: { in: abandoned.map((row) => row.id) } },
    });
    for (const row of abandoned) await dropRelaySession(deps.redis, prefix, row.session);
    return count;
  };

  return async () => {
    const report = {
      deliveries: await redriveDeliveries(),
      fanOuts: await retryFanOuts(),
      notices: await republishNotices(),
      listeners: await sweepListeners(),
    };
    deps.metrics.redriven.inc({ kind: 'delivery' }, report.deliveries);
    deps.metrics.redriven.inc({ kind: 'fan_out' }, report.fanOuts);
    deps.metrics.redriven.inc({ kind: 'notice' }, report.notices);
    if (report.deliveries > 0 || report.fanOuts > 0 || report.notices > 0 || report.listeners > 0)
      deps.log.warn(report, 'reconciler re-drove stranded work');
    return report;
  };
}
