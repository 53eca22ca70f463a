/** A bare `pg` pool for the worker's hot path (fan-out, load, record), where Prisma's per-query overhead counts. */
import pg from 'pg';
import { connectTimeoutMs } from './client.js';

export type { Pool } from 'pg';

export interface PgPoolOptions {
  /** PostgreSQL connection URL. */
  databaseUrl: string;
  /** Most connections (pg's `max`); default 10. */
  poolSize?: number;
  /** Whether named statements are planned once ({@link planOnce}); default true. */
  genericPlans?: boolean;
  /** Told of an idle client's error (a server restart): the pool drops it. Default: ignored. */
  onIdleError?: (error: Error) => void;
}

/**
 * Named statements planned once (`plan_cache_mode`, PostgreSQL 15 docs, "Query Planning"): by
 * default a statement run for one row looks cheaper planned per call, so it would be replanned every
 * run; day partitions are still pruned at run time. A pooler must pass it on; DATABASE_GENERIC_PLANS=false omits it.
 */
const planOnce = '-c plan_cache_mode=force_generic_plan';

/**
 * `databaseUrl` without `options`, and the startup options: {@link planOnce} (unless `genericPlans`
 * is false) then the URL's own, which win (`-c` applies in order); `pg` would let the URL's drop it.
 */
export function startupOptions(
  databaseUrl: string,
  genericPlans: boolean,
): { connectionString: string; options?: string } {
  const url = new URL(databaseUrl);
  const own = url.searchParams.get('options');
  url.searchParams.delete('options');
  const options = [genericPlans ? planOnce : '', own ?? ''].filter((part) => part.trim() !== '').join(' ');
  return {
    connectionString: own === null ? databaseUrl : url.toString(),
    ...(options === '' ? {} : { options }),
  };
}

/**
 * A `pg` pool with Prisma's connect timeout ({@link connectTimeoutMs}, so an unreachable server fails
 * a query), {@link startupOptions}, and idle errors to `onIdleError` (an unheard `error` ends the process).
 */
export function createPgPool(options: PgPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    ...startupOptions(options.databaseUrl, options.genericPlans !== false),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: connectTimeoutMs,
  });
  pool.on('error', options.onIdleError ?? (() => undefined));
  return pool;
}
