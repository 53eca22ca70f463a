/**
 * The migration runner (Umzug): applies prisma/migrations/<timestamp>_<name>/migration.sql in order,
 * each in one transaction with its record in Prisma Migrate's bookkeeping (`_prisma_migrations`,
 * SHA-256 checksums, advisory lock 72707369), so `prisma migrate status` accepts the result.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { Umzug, type UmzugStorage } from 'umzug';
import { ensureDatabase } from './create-database.js';

/** The advisory lock key of Prisma Migrate (schema-engine's `advisory_lock_id`). */
export const migrationLockKey = 72707369;

/** An applied migration whose file no longer matches what was applied, or that failed half-way. */
export class MigrationStateError extends Error {
  override name = 'MigrationStateError';
}

export interface MigrateOptions {
  databaseUrl: string;
  /** Folder of `<timestamp>_<name>/migration.sql` folders (Prisma's layout). */
  migrationsDir: string;
  /** Receives one line per applied migration; default: silent. */
  log?: (line: string) => void;
}

/** What a {@link migrate} run did. */
export interface MigrateResult {
  /** Whether the database itself had to be created. */
  createdDatabase: boolean;
  /** Migrations applied by this run, in order; empty when the database was up to date. */
  applied: string[];
}

/** One migration of a migrations folder. */
export interface MigrationFile {
  /** Its folder's name, `<timestamp>_<name>`: the order migrations are applied in. */
  name: string;
  /** Its `migration.sql`. */
  sql: string;
  /** SHA-256 of `sql`, in hex: the checksum Prisma Migrate records in `_prisma_migrations`. */
  checksum: string;
}

const createBookkeeping = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/**
 * Creates the database if needed and applies every pending migration.
 * @throws MigrationStateError when an applied migration changed, is missing, or failed earlier; nothing is applied
 * @throws pg's DatabaseError when a migration's SQL fails (that migration is rolled back)
 */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const createdDatabase = await ensureDatabase(options.databaseUrl);
  const files = await readMigrationFiles(options.migrationsDir);
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockKey]);
    await client.query(createBookkeeping);
    const executed = await checkApplied(client, files);
    const applied: string[] = [];
    const storage: UmzugStorage = {
      executed: async () => executed,
      // The record is written inside the migration's own transaction (see `up` below).
      logMigration: async () => undefined,
      unlogMigration: async () => {
        throw new MigrationStateError('Reverting migrations is not supported');
      },
    };
    const umzug = new Umzug({
      migrations: files.map((file) => ({ name: file.name, up: () => applyOne(client, file) })),
      storage,
      logger: undefined,
    });
    umzug.on('migrated', ({ name }) => {
      applied.push(name);
      options.log?.(`applied migration ${name}`);
    });
    await umzug.up();
    return { createdDatabase, applied };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [migrationLockKey]).catch(() => undefined);
    await client.end();
  }
}

/** The migrations of `dir`, in order. @throws Node's file system errors when a file cannot be read */
export async function readMigrationFiles(dir: string): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** Names of the applied migrations, after checking they still match their files. */
async function checkApplied(client: pg.Client, files: MigrationFile[]): Promise<string[]> {
  const { rows } = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
    'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY started_at',
  );
  const byName = new Map(files.map((file) => [file.name, file]));
  for (const row of rows) {
    if (row.finished_at === null) {
      throw new MigrationStateError(
        `Migration ${row.migration_name} failed in an earlier run; resolve it before migrating again`,
      );
    }
    const file = byName.get(row.migration_name);
    if (file === undefined) {
      throw new MigrationStateError(
        `Applied migration ${row.migration_name} is missing from the migrations folder`,
      );
    }
    if (file.checksum !== row.checksum) {
      throw new MigrationStateError(
        `Migration ${row.migration_name} was changed after it was applied (checksum ${row.checksum}, file ${file.checksum}); add a new migration instead`,
      );
    }
  }
  return rows.map((row) => row.migration_name);
}

async function applyOne(client: pg.Client, file: MigrationFile): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(file.sql);
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, now(), 1)`,
      [randomUUID(), file.checksum, file.name],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
