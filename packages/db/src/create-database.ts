/** Creating the target database of a connection URL when it does not exist yet. */
import pg from 'pg';

/**
 * Creates `databaseUrl`'s database unless it exists (via `postgres`); safe from several processes.
 * @returns true when this call created it
 * @throws pg's DatabaseError for anything but "already exists" (missing privileges, say)
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return true;
  } catch (error) {
    // Created meanwhile by another runner: 42P04 duplicate_database, or 23505 when both raced the catalogue.
    const code = (error as { code?: string }).code;
    if (code === '42P04' || code === '23505') return false;
    throw error;
  } finally {
    await admin.end();
  }
}
