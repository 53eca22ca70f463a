/**
 * A PostgreSQL database of a test file's own: a copy of a template migrated with the project's
 * runner, dropped afterwards, so tests never touch a developer's data and can run twice in a row.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, migrationsDir, readMigrationFiles } from '@webhooks/db';

/** Server the test databases are made on (TEST_DATABASE_URL's database part is replaced). */
export const testServerUrl = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

/** A database of its own: `url` to connect, `drop()` to remove it. */
export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty database named `wh_test_<tag>_<random>`; not migrated. */
export function newTestDatabaseUrl(tag: string): { name: string; url: string } {
  const name = `wh_test_${tag.replace(/\W/g, '_')}_${randomBytes(4).toString('hex')}`;
  const url = new URL(testServerUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Runs `work` on a connection to the test server's admin database, closed afterwards. */
async function withAdmin<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: testServerUrl });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** Drops a test database, closing whatever connections remain on it. */
export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((admin) =>
    admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
}

/** The migrations' digest: a template is reused only for the migrations it was built from. */
async function migrationsDigest(): Promise<string> {
  const hash = createHash('sha256');
  for (const { name, checksum } of await readMigrationFiles(migrationsDir))
    hash.update(`${name}\0${checksum}\0`);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The name of the migrated database test databases are copied from, built on first use. It is
 * migrated under a temporary name and renamed once complete, so a run killed half-way leaves no
 * template a later run would copy (a build whose migration fails is dropped); builders exclude each
 * other with an advisory lock on the server's admin database, held until the builder's connection
 * closes. Templates of other migrations are dropped then.
 */
async function migratedTemplate(): Promise<string> {
  const name = `wh_template_${await migrationsDigest()}`;
  return withAdmin(async (admin) => {
    await admin.query("SELECT pg_advisory_lock(hashtext('webhooks test template'))");
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return name;
    const stale = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE 'wh\\_template\\_%'`,
    );
    for (const { datname } of stale.rows) await dropDatabase(datname);
    const building = newTestDatabaseUrl('template_build');
    await migrate({ databaseUrl: building.url, migrationsDir }).catch(async (error: unknown) => {
      await dropDatabase(building.name);
      throw error;
    });
    await admin.query(
      `ALTER DATABASE ${pg.escapeIdentifier(building.name)} RENAME TO ${pg.escapeIdentifier(name)}`,
    );
    return name;
  });
}

/** The template of this test file's databases, looked up once per file. */
let template: Promise<string> | undefined;

/**
 * A migrated database of the test file's own: a copy of the template (`CREATE DATABASE … TEMPLATE`,
 * about 0.2 s on the CI machine where running the migrations took 0.7 s for each database).
 */
export async function createTestDatabase(tag: string): Promise<TestDatabase> {
  template ??= migratedTemplate().catch((error: unknown) => {
    template = undefined;
    throw error;
  });
  const { name, url } = newTestDatabaseUrl(tag);
  const from = await template;
  await withAdmin((admin) =>
    admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(from)}`),
  );
  return { name, url, drop: () => dropDatabase(name) };
}
