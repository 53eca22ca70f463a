/**
 * The reconciler: re-drives whatever an outage, a crash or a lost Redis write left
 * without a job.
 * - A delivery `pending` for longer than the grace period past its `next_attempt_at` whose round
 *   has no live job (none at all, or one in the failed set after stalling too often) gets its job
 *   again, under its deterministic id (`deliveryJobId`). Of a FIFO subscription, only the head
 *   (`delivery/fifo.ts`): the later ones wait for their turn without a job.
 * - A fan-out job in the failed set is retried with fresh attempts.
 *
 * It runs as one BullMQ job scheduler (worker.ts), so once per interval across all workers, and it
 * is idempotent: a second run finds every job it re-drove alive and does nothing.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from '@webhooks/shared';
import type { Logger } from 'pino';
import type { PrismaClient } from '@webhooks/db';
import type { WorkerMetrics } from './metrics.js';
import type { AccountScheduler } from './scheduling/account-scheduler.js';
import { deliveryJob, deliveryJobId, type DeliveryJobData, type EventJobData } from '@webhooks/shared';

/** What the reconciler needs. */
export interface ReconcilerDeps {
  prisma: PrismaClient;
  /** The connection of the queues below, to check many jobs in one pipeline. */
  redis: RedisConnection;
  deliveries: Queue<DeliveryJobData>;
  events: Queue<EventJobData>;
  /** Holds first rounds waiting for their account's turn: those are not stranded. */
  scheduler: Pick<AccountScheduler, 'holds'>;
  /** DELIVERY_MAX_ATTEMPTS, for the jobs it re-creates. */
  maxAttempts: number;
  /** RECONCILE_GRACE_MS: how far past its `next_attempt_at` a pending delivery must be, in ms. */
  graceMs: number;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'redriven'>;
}

/** What one run re-drove. */
export interface ReconcileReport {
  /** Pending deliveries whose job was re-created. */
  deliveries: number;
  /** Failed fan-out jobs retried. */
  fanOuts: number;
}

/** Rows read per query, and job checks per Redis pipeline. */
const pageSize = 1_000;

type Pending = {
  event_id: string;
  subscription_id: string;
  round: number;
  next_attempt_at: Date;
  id: string;
};

/** Creates one run of the reconciler; each call scans everything once and reports what it re-drove. */
export function createReconciler(deps: ReconcilerDeps): () => Promise<ReconcileReport> {
  /**
   * The jobs of `rows` that are not alive: missing, or in BullMQ's failed set, and not waiting in
   * the account scheduler. (A completed delivery job is removed at once, `deliveryJobOptions`, so
   * it counts as missing.)
   */
  const stranded = async (pending: Pending[]) => {
    const firstRounds = pending.filter((row) => row.round === 0);
    const holds = await deps.scheduler.holds(
      firstRounds.map((row) => ({ eventId: row.event_id, subscriptionId: row.subscription_id })),
    );
    const held = new Set(firstRounds.filter((_, i) => holds[i]).map((row) => row.id));
    const rows = pending.filter((row) => !held.has(row.id));
    const pipeline = deps.redis.pipeline();
    for (const row of rows) {
      const id = deliveryJobId(row.event_id, row.subscription_id, row.round);
      pipeline.exists(deps.deliveries.toKey(id));
      pipeline.zscore(deps.deliveries.toKey('failed'), id);
    }
    const answers = (await pipeline.exec()) ?? [];
    return rows
      .map((row, i) => {
        const [exists, failed] = answers
          .slice(2 * i, 2 * i + 2)
          .map(([error, value]: [Error | null, unknown]) => {
            if (error) throw error;
            return value;
          });
        return { row, exists: exists === 1, failed: failed !== null };
      })
      .filter(({ exists, failed }) => !exists || failed);
  };

  const redriveDeliveries = async (): Promise<number> => {
    let redriven = 0;
    let after = { at: new Date(0), id: '00000000-0000-0000-0000-000000000000' };
    for (;;) {
      const rows = await deps.prisma.$queryRaw<Pending[]>`
        SELECT d.id::text, d.event_id::text, d.subscription_id::text, d.round, d.next_attempt_at
        FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
        WHERE d.status = 'pending'
          AND d.next_attempt_at < now() - make_interval(secs => ${deps.graceMs / 1000})
          AND (d.next_attempt_at, d.id) > (${after.at}, ${after.id}::uuid)
          -- A FIFO subscription's later deliveries have no job by design: only its head is stranded.
          AND (s.ordering <> 'fifo' OR NOT EXISTS (
            SELECT 1 FROM deliveries earlier
            WHERE earlier.subscription_id = d.subscription_id AND earlier.status = 'pending'
              AND earlier.event_id < d.event_id))
        ORDER BY d.next_attempt_at, d.id
        LIMIT ${pageSize}`;
      if (rows.length === 0) return redriven;
      const lost = await stranded(rows);
      for (const { row, exists } of lost) {
        if (exists) await deps.deliveries.remove(deliveryJobId(row.event_id, row.subscription_id, row.round));
      }
      if (lost.length > 0) {
        await deps.deliveries.addBulk(
          lost.map(({ row }) =>
            deliveryJob(
              { eventId: row.event_id, subscriptionId: row.subscription_id, round: row.round },
              deps.maxAttempts,
            ),
          ),
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
    for (;;) {
      const failed = await deps.events.getFailed(0, pageSize - 1);
      if (failed.length === 0) return retried;
      for (const job of failed) await job.retry('failed', { resetAttemptsMade: true });
      retried += failed.length;
      if (failed.length < pageSize) return retried;
    }
  };

  return async () => {
    const report = { deliveries: await redriveDeliveries(), fanOuts: await retryFanOuts() };
    deps.metrics.redriven.inc({ kind: 'delivery' }, report.deliveries);
    deps.metrics.redriven.inc({ kind: 'fan_out' }, report.fanOuts);
    if (report.deliveries > 0 || report.fanOuts > 0)
      deps.log.warn(report, 'reconciler re-drove stranded work');
    return report;
  };
}
