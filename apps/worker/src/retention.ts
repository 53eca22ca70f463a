/**
 * Retention, hourly: events, deliveries and attempts older than RETENTION_DAYS go, whole days
 * dropped (log-partitions.ts), default-partition rows in batches of `batchSize`; expired previous
 * signing secrets and PostgreSQL idempotency keys past 24 hours too.
 */
import type { PrismaClient } from '@webhooks/db';
import { idempotencyWindowMs } from '@webhooks/shared';
import { dropExpiredLogPartitions } from './log-partitions.js';

/** What one run deleted: days of partitions, and rows elsewhere. */
export interface RetentionReport {
  /** Days (`YYYY-MM-DD`, UTC) whose partitions were dropped, with every row in them. */
  partitionsDropped: string[];
  /** Rows deleted one by one from the default partitions. */
  attempts: number;
  deliveries: number;
  events: number;
  /** Subscriptions whose expired previous signing secret was cleared. */
  previousSecrets: number;
  /** Idempotency keys kept in PostgreSQL, past their 24 hours. */
  idempotencyKeys: number;
}

export interface RetentionOptions {
  /** RETENTION_DAYS: rows older than this many days before `now` are deleted (by their day, or when stored). */
  retentionDays: number;
  /** Most rows one statement deletes (default 1,000). */
  batchSize?: number;
  now?: Date;
  /** Called after each statement; retention goes on when it resolves. */
  afterBatch?: (report: RetentionReport) => Promise<void> | void;
}

/** Deletes everything older than the retention period and reports how many rows of each. */
export async function deleteExpiredRows(
  prisma: PrismaClient,
  options: RetentionOptions,
): Promise<RetentionReport> {
  const batchSize = options.batchSize ?? 1_000;
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.retentionDays * 86_400_000);
  const report: RetentionReport = {
    partitionsDropped: await dropExpiredLogPartitions(prisma, cutoff),
    attempts: 0,
    deliveries: 0,
    events: 0,
    previousSecrets: 0,
    idempotencyKeys: 0,
  };
  const drain = async (table: 'attempts' | 'deliveries' | 'events', deleteBatch: () => Promise<number>) => {
    for (;;) {
      const deleted = await deleteBatch();
      report[table] += deleted;
      await options.afterBatch?.({ ...report });
      if (deleted < batchSize) return;
    }
  };
  await drain(
    'attempts',
    () => prisma.$executeRaw`
      DELETE FROM delivery_attempts_default WHERE (delivery_id, id) IN (
        SELECT a.delivery_id, a.id FROM deliveries_default d JOIN delivery_attempts_default a ON a.delivery_id = d.id
        WHERE d.created_at < ${cutoff} LIMIT ${batchSize})`,
  );
  await drain(
    'deliveries',
    () => prisma.$executeRaw`
      DELETE FROM deliveries_default WHERE id IN (
        SELECT id FROM deliveries_default WHERE created_at < ${cutoff} LIMIT ${batchSize})`,
  );
  await drain(
    'events',
    () => prisma.$executeRaw`
      DELETE FROM events_default WHERE id IN (
        SELECT e.id FROM events_default e
        WHERE e.created_at < ${cutoff} AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
        LIMIT ${batchSize})`,
  );
  report.previousSecrets = await prisma.$executeRaw`
    UPDATE subscriptions SET previous_secret = NULL, previous_secret_expires_at = NULL
    WHERE previous_secret_expires_at < ${options.now ?? new Date()}`;
  report.idempotencyKeys = await prisma.$executeRaw`
    DELETE FROM idempotency_keys
    WHERE created_at < ${new Date((options.now ?? new Date()).getTime() - idempotencyWindowMs)}`;
  await options.afterBatch?.({ ...report });
  return report;
}
