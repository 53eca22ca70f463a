/**
 * A bare `pg` pool for the worker's hot path: the fan-out, and loading and recording deliveries,
 * a few statements per delivery, where Prisma's per-query overhead counts. Prisma stays the
 * schema, the migrations and the data layer of everything else.
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
  /** Whether named statements are planned once ({@link planOnce}); default true. */
  genericPlans?: boolean;
  /**
   * Told of an idle client's error (a server restart); the pool drops that client, and the next
   * query fails or reconnects. Default: ignored.
   */
  onIdleError?: (error: Error) => void;
}

/**
 * How the pool's sessions plan their named statements: once, whatever the parameters
 * (`plan_cache_mode`, postgresql.org/docs/15/runtime-config-query.html#GUC-PLAN-CACHE-MODE). By
 * default PostgreSQL keeps the generic plan only if it is estimated no dearer
 * (postgresql.org/docs/15/sql-prepare.html, "Notes"), and a statement run for one row at a time is
 * always estimated cheaper planned for its one-element arrays, so it would be planned on every
 * run. Day partitions are still pruned at run time. A pooler in front must pass the setting on
 * (docs/operations.md); DATABASE_GENERIC_PLANS=false leaves it out.
 */
const planOnce = '-c plan_cache_mode=force_generic_plan';

/**
 * `databaseUrl` without its `options` parameter, and the startup options to send: {@link planOnce}
 * (unless `genericPlans` is false), then the URL's own, so that an operator's setting of the same
 * parameter there wins (PostgreSQL applies `-c` switches in order). `pg` lets a parameter parsed from
 * the URL replace the one passed beside it, so the URL's `options` would otherwise drop
 * {@link planOnce} without a word.
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
 * A `pg` pool with the Prisma client's connection timeout ({@link connectTimeoutMs}), so that an
 * unreachable server fails a query instead of hanging it, and whose named statements are planned
 * once ({@link planOnce}) unless `genericPlans` is false, beside the startup options the URL
 * carries ({@link startupOptions}). An idle client's error goes to
 * `onIdleError`, never to an unheard `error` event (which would end the process). Call `end()` to
 * close it.
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
