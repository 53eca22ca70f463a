/**
 * A PostgreSQL database of a test file's own: created and migrated with the project's runner,
 * dropped afterwards, so tests never touch a developer's data and can run twice in a row.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, migrationsDir } from '@webhooks/db';

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

/** Drops a test database, closing whatever connections remain on it. */
export async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: testServerUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** A migrated database of the test file's own. */
export async function createTestDatabase(tag: string): Promise<TestDatabase> {
  const { name, url } = newTestDatabaseUrl(tag);
  await migrate({ databaseUrl: url, migrationsDir });
  return { name, url, drop: () => dropDatabase(name) };
}
