/**
 * What a bench stack holds when its deliveries stopped arriving, for the error of a wait that
 * timed out: a stall seen once in hundreds of runs can then be told apart from a slow machine, and
 * a lost job from a worker that takes none. Throwaway state is not kept; only this text is.
 */
import { Redis } from 'ioredis';
import type pg from 'pg';

/** BullMQ's per-queue sets and lists whose sizes say where jobs wait (the key's last segment). */
const queueStates = ['wait', 'active', 'delayed', 'prioritized', 'paused', 'waiting-children', 'failed'];

/**
 * One line: the stack's deliveries by status, then each BullMQ state of each of its queues under
 * `prefix` with its size (`name:state=n`, empty ones left out). Reads the keys under `prefix` on
 * the node `redisUrl` names only: with sharded queues (their own hash tags) or on a Redis Cluster,
 * part of them. Never throws: what it could not read, it says.
 */
export async function describeStall(db: pg.Client, redisUrl: string, prefix: string): Promise<string> {
  const parts: string[] = [];
  try {
    const { rows } = await db.query<{ status: string; n: number }>(
      `SELECT status::text, count(*)::int AS n FROM deliveries GROUP BY 1 ORDER BY 1`,
    );
    parts.push(`deliveries ${rows.map((r) => `${r.status}=${r.n}`).join(' ') || 'none'}`);
  } catch (error) {
    parts.push(`deliveries not read (${(error as Error).message})`);
  }
  const redis = new Redis(redisUrl, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const sizes: string[] = [];
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<
      string[]
    >) {
      for (const key of keys) {
        const state = key.slice(key.lastIndexOf(':') + 1);
        if (!queueStates.includes(state)) continue;
        const type = await redis.type(key);
        const size =
          type === 'list' ? await redis.llen(key) : type === 'zset' ? await redis.zcard(key) : null;
        if (size !== null && size > 0) sizes.push(`${key.slice(prefix.length + 1)}=${size}`);
      }
    }
    parts.push(`jobs ${sizes.sort().join(' ') || 'none waiting'}`);
  } catch (error) {
    parts.push(`jobs not read (${(error as Error).message})`);
  } finally {
    redis.disconnect();
  }
  return parts.join('; ');
}
