/**
 * A bare `pg` pool for the worker's hot path: the fan-out, and loading and recording
 * deliveries. Prisma stays the schema, the migrations and the data layer of everything else; on a
 * path that runs a few statements per delivery, its per-query overhead was a third of the cost
 * (bench/HISTORY.md, "Throughput work").
 */
import pg from 'pg';
import { connectTimeoutMs } from './client.js';

export type { Pool } from 'pg';

/** Options of {@link createPgPool}. */
export interface PgPoolOptions {
  /** PostgreSQL connection URL. */
  databaseUrl: string;
  /** Most connections (pg's `max`); default 10. */
  poolSize?: number;
  /**
   * Told of an idle client's error (a server restart); the pool drops that client, and the next
   * query fails or reconnects. Default: ignored.
   */
  onIdleError?: (error: Error) => void;
}

/**
 * A `pg` pool with the Prisma client's connection timeout ({@link connectTimeoutMs}), so that an
 * unreachable server fails a query instead of hanging it. An idle client's error goes to
 * `onIdleError`, never to an unheard `error` event (which would end the process). Call `end()` to
 * close it.
 */
export function createPgPool(options: PgPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: connectTimeoutMs,
  });
  pool.on('error', options.onIdleError ?? (() => undefined));
  return pool;
}
