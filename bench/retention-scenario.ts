/**
 * Retention's cost: the same delivery log, `expiredEvents` events past RETENTION_DAYS with one
 * delivery and four attempts each (plus a tenth as many recent ones, kept), removed two ways:
 * - by dropping the day partitions (the current layout, `deleteExpiredRows` of the worker);
 * - by deleting rows in batches of 1,000 from unpartitioned tables (the layout and statements
 *   before the delivery log was partitioned), the baseline.
 * Each is measured from a CHECKPOINT: wall time, and the WAL the server wrote meanwhile
 * (pg_current_wal_lsn before and after, so nothing else may write to the server while it runs).
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createPrismaClient, migrationsDir } from '@webhooks/db';
import { deleteExpiredRows } from '@webhooks/worker';
import { createBenchDatabase, type BenchDatabase } from './harness.js';
import { createPastPartitions, derivedDeliveryId, fillLog, uuidAt } from './log-fill.js';

const partitioningMigration = '20261124120000_partitioned_delivery_log';
const subscriptionId = '01900000-0000-7000-8000-0000000000b1';
const dayMs = 86_400_000;
const retentionDays = 30;

/** One way's cost: seconds, and WAL written in bytes. */
export interface RetentionCost {
  seconds: number;
  walBytes: number;
}

/** Both ways, on logs of `attempts` expired attempts. */
export interface RetentionResult {
  attempts: number;
  partitions: RetentionCost;
  rows: RetentionCost;
}

/** Runs `remove` from a checkpoint and measures it. */
async function measure(db: pg.Client, remove: () => Promise<void>): Promise<RetentionCost> {
  await db.query('CHECKPOINT');
  const lsn = async () =>
    (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  const from = await lsn();
  const started = performance.now();
  await remove();
  const seconds = (performance.now() - started) / 1000;
  const {
    rows: [wal],
  } = await db.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS bytes', [
    from,
  ]);
  return { seconds, walBytes: Number(wal!.bytes) };
}

/** The rows left, to check that both ways kept the same log. */
async function remaining(db: pg.Client): Promise<string> {
  const { rows } = await db.query<{ counts: string }>(
    `SELECT (SELECT count(*) FROM events) || '/' || (SELECT count(*) FROM deliveries) || '/' ||
            (SELECT count(*) FROM delivery_attempts) AS counts`,
  );
  return rows[0]!.counts;
}

/** The statements retention ran before partitioning: batches of at most 1,000 rows, attempts first. */
async function deleteRowsInBatches(db: pg.Client, cutoff: Date) {
  const statements = [
    `DELETE FROM delivery_attempts WHERE id IN (
       SELECT a.id FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
       WHERE d.created_at < $1 LIMIT 1000)`,
    `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE created_at < $1 LIMIT 1000)`,
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e
       WHERE e.created_at < $1 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
       LIMIT 1000)`,
  ];
  for (const statement of statements) {
    while (((await db.query(statement, [cutoff])).rowCount ?? 0) === 1000);
  }
}

/** One way: a database migrated with `dir`, filled, then `remove`d. */
async function run(
  tag: string,
  dir: string,
  expiredEvents: number,
  deliveryIdSql: string,
  remove: (database: BenchDatabase, db: pg.Client, cutoff: Date) => Promise<void>,
  step: (name: string) => void,
) {
  const database = await createBenchDatabase(tag, dir);
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    const now = Date.now();
    await db.query(
      `INSERT INTO subscriptions (id, account_id, callback_url, secret, updated_at)
       VALUES ($1, 'bench', 'https://example.com/hooks', 'sealed', now())`,
      [subscriptionId],
    );
    const partitioned = dir === migrationsDir;
    if (partitioned) {
      await createPastPartitions(db, 41);
    }
    step(`${tag}: filling`);
    const log = { accountId: 'bench', subscriptionId, deliveryIdSql };
    await fillLog(db, { ...log, count: expiredEvents, fromMs: now - 40 * dayMs, toMs: now - 35 * dayMs });
    await fillLog(db, {
      ...log,
      count: Math.ceil(expiredEvents / 10),
      fromMs: now - 3 * dayMs,
      toMs: now - dayMs,
    });
    await db.query('VACUUM ANALYZE');
    step(`${tag}: retention`);
    const cutoff = new Date(now - retentionDays * dayMs);
    const cost = await measure(db, () => remove(database, db, cutoff));
    return { cost, left: await remaining(db) };
  } finally {
    await db.end();
    await database.drop();
  }
}

/** Measures both ways on logs of `expiredEvents` × 4 expired attempts; `step` names each phase. */
export async function retentionCost(
  expiredEvents: number,
  step: (name: string) => void,
): Promise<RetentionResult> {
  const before = await mkdtemp(path.join(tmpdir(), 'wh-bench-migrations-'));
  try {
    await cp(migrationsDir, before, { recursive: true });
    await rm(path.join(before, partitioningMigration), { recursive: true });
    const rows = await run(
      'retention_rows',
      before,
      expiredEvents,
      uuidAt('e.created_at'),
      (_, db, cutoff) => deleteRowsInBatches(db, cutoff),
      step,
    );
    const partitions = await run(
      'retention_partitions',
      migrationsDir,
      expiredEvents,
      derivedDeliveryId,
      async (database, _, cutoff) => {
        const prisma = createPrismaClient({ databaseUrl: database.url, poolSize: 1 });
        try {
          await deleteExpiredRows(prisma, {
            retentionDays,
            now: new Date(cutoff.getTime() + retentionDays * dayMs),
          });
        } finally {
          await prisma.$disconnect();
        }
      },
      step,
    );
    if (rows.left !== partitions.left) {
      throw new Error(`retention kept different logs: rows ${rows.left}, partitions ${partitions.left}`);
    }
    return { attempts: expiredEvents * 4, partitions: partitions.cost, rows: rows.cost };
  } finally {
    await rm(before, { recursive: true, force: true });
  }
}
