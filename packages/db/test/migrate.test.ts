import { readdirSync } from 'node:fs';
import { cp, mkdtemp, appendFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { migrate, migrationsDir, MigrationStateError } from '../src/index.js';
import { dropDatabase, newTestDatabaseUrl } from '../../../test/support/database.js';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Every migration folder of the repository, in order. */
const allMigrations = readdirSync(migrationsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

describe('db:migrate runner', () => {
  const created: string[] = [];
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  });
  afterAll(async () => {
    await Promise.all(created.map(dropDatabase));
    await rm(workDir, { recursive: true, force: true });
  });

  function database(tag: string) {
    const db = newTestDatabaseUrl(tag);
    created.push(db.name);
    return db;
  }

  it('creates a missing database, applies every migration and records it as Prisma does', async () => {
    const { url } = database('fresh');
    const result = await migrate({ databaseUrl: url, migrationsDir });
    expect(result.createdDatabase).toBe(true);
    expect(result.applied).toEqual(allMigrations);
    expect(allMigrations.slice(0, 2)).toEqual(['20261121000000_init', '20261121010000_uuid_generate_v7']);
    const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      url,
      'SELECT migration_name, checksum, finished_at FROM _prisma_migrations ORDER BY migration_name',
    );
    expect(rows.map((row) => row.migration_name)).toEqual(result.applied);
    expect(rows[0]?.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]?.finished_at).toBeInstanceOf(Date);
    const tables = await query<{ table_name: string }>(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(['subscriptions', 'events', 'deliveries', 'delivery_attempts']),
    );
  });

  it('creates UUIDv7 ids in the database (uuid_generate_v7)', async () => {
    const { url } = database('uuid');
    await migrate({ databaseUrl: url, migrationsDir });
    const [row] = await query<{ id: string; at: Date }>(
      url,
      'SELECT uuid_generate_v7()::text AS id, now() AS at',
    );
    expect(row?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const millis = parseInt(row!.id.replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(millis - row!.at.getTime())).toBeLessThan(60_000);
  });

  it('is a no-op when run again', async () => {
    const { url } = database('rerun');
    await migrate({ databaseUrl: url, migrationsDir });
    const again = await migrate({ databaseUrl: url, migrationsDir });
    expect(again).toEqual({ createdDatabase: false, applied: [] });
    const rows = await query(url, 'SELECT 1 FROM _prisma_migrations');
    expect(rows).toHaveLength(allMigrations.length);
  });

  it('refuses to run when an applied migration file was changed', async () => {
    const { url } = database('changed');
    const dir = path.join(workDir, 'changed');
    await cp(migrationsDir, dir, { recursive: true });
    await migrate({ databaseUrl: url, migrationsDir: dir });
    await appendFile(path.join(dir, '20261121000000_init', 'migration.sql'), '\n-- edited\n');
    await expect(migrate({ databaseUrl: url, migrationsDir: dir })).rejects.toThrow(MigrationStateError);
  });

  it('applies a new migration after the applied ones, and rolls back one that fails', async () => {
    const { url } = database('pending');
    const dir = path.join(workDir, 'pending');
    await cp(migrationsDir, dir, { recursive: true });
    await migrate({ databaseUrl: url, migrationsDir: dir });
    await cp(path.join(dir, '20261121000000_init'), path.join(dir, '20261122000000_bad'), {
      recursive: true,
    });
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      path.join(dir, '20261122000000_bad', 'migration.sql'),
      'CREATE TABLE half_done (id int);\nSELECT no_such_function();\n',
    );
    await expect(migrate({ databaseUrl: url, migrationsDir: dir })).rejects.toThrow(/no_such_function/);
    const leftovers = await query(
      url,
      "SELECT 1 FROM information_schema.tables WHERE table_name = 'half_done'",
    );
    expect(leftovers).toHaveLength(0);
    await writeFile(path.join(dir, '20261122000000_bad', 'migration.sql'), 'CREATE TABLE later (id int);\n');
    const result = await migrate({ databaseUrl: url, migrationsDir: dir });
    expect(result.applied).toEqual(['20261122000000_bad']);
  });

  it('partitions the delivery log by day and keeps every row of a database migrated before', async () => {
    const { url } = database('partition');
    const partitioning = '20261124120000_partitioned_delivery_log';
    const dir = path.join(workDir, 'before-partitioning');
    await cp(migrationsDir, dir, { recursive: true });
    await rm(path.join(dir, partitioning), { recursive: true });
    await migrate({ databaseUrl: url, migrationsDir: dir });
    await query(
      url,
      `INSERT INTO subscriptions (id, account_id, callback_url, secret, updated_at)
         VALUES ('01900000-0000-7000-8000-000000000001', 'acct', 'https://example.com/h', 'sealed', now());
       INSERT INTO events (id, account_id, type, data, occurred_at, created_at)
         SELECT uuid_generate_v7(), 'acct', 'call.started', '{}', now(), now() - interval '2 days' FROM generate_series(1, 3);
       INSERT INTO events (id, account_id, type, data, occurred_at)
         VALUES ('f0000000-0000-4000-8000-000000000001', 'acct', 'call.started', '{}', now());
       INSERT INTO deliveries (id, event_id, subscription_id, updated_at)
         SELECT uuid_generate_v7(), id, '01900000-0000-7000-8000-000000000001', now() FROM events;
       INSERT INTO delivery_attempts (delivery_id, attempt_number, started_at, duration_ms)
         SELECT id, 1, now(), 5 FROM deliveries;`,
    );
    // Each attempt as (its id, its delivery's event, subscription and status), and each event.
    const log = `SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM events) || '|' ||
      (SELECT string_agg(a.id || d.event_id::text || d.subscription_id::text || d.status, ',' ORDER BY a.id)
       FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id) AS rows`;
    const before = await query<{ rows: string }>(url, log);

    expect((await migrate({ databaseUrl: url, migrationsDir })).applied).toEqual([partitioning]);
    expect(await query<{ rows: string }>(url, log)).toEqual(before);
    // Deliveries stored before take the id of every delivery: derived from event and subscription.
    expect(
      await query(url, 'SELECT id FROM deliveries WHERE id <> delivery_id(event_id, subscription_id)'),
    ).toEqual([]);
    expect(await query(url, 'SELECT count(*)::int AS n FROM deliveries')).toEqual([{ n: 4 }]);
    const placed = await query<{ partition: string; n: number }>(
      url,
      `SELECT tableoid::regclass::text AS partition, count(*)::int AS n FROM events GROUP BY 1 ORDER BY 1`,
    );
    expect(placed).toEqual([
      { partition: 'events_default', n: 1 },
      { partition: `events_p${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`, n: 3 },
    ]);
    // Attempts keep numbering on, and still go with their delivery's subscription.
    const [next] = await query<{ id: string }>(
      url,
      `INSERT INTO delivery_attempts (delivery_id, attempt_number, started_at, duration_ms)
       SELECT id, 2, now(), 5 FROM deliveries LIMIT 1 RETURNING id::text`,
    );
    expect(Number(next!.id)).toBe(5);
    await query(url, 'DELETE FROM subscriptions');
    expect(await query(url, 'SELECT 1 FROM delivery_attempts')).toEqual([]);
  });

  it('lets only one of two concurrent runners apply a migration', async () => {
    const { url } = database('concurrent');
    const results = await Promise.all([
      migrate({ databaseUrl: url, migrationsDir }),
      migrate({ databaseUrl: url, migrationsDir }),
    ]);
    expect(results.map((r) => r.applied.length).sort()).toEqual([0, allMigrations.length]);
    const rows = await query(url, 'SELECT 1 FROM _prisma_migrations');
    expect(rows).toHaveLength(allMigrations.length);
  });
});
