/**
 * What a delivery costs each part of the system, for the capacity model (docs/performance.md):
 * counters read before and after a load, divided by the deliveries it made.
 * - Redis: commands executed (INFO commandstats, which counts the commands scripts call too);
 * - PostgreSQL: transactions and tuples written (inserted, updated, deleted) in the stack's
 *   database (pg_stat_database, whose counters are flushed within a second of a commit);
 * - CPU in ms (utime + stime from /proc/<pid>/stat, 100 ticks a second) of the API process, the
 *   worker processes, the Redis server and every PostgreSQL process.
 * Redis and PostgreSQL counters are the servers' own: nothing else may use them meanwhile.
 */
import { readdir, readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { sleep } from '../scripts/lib/wait.js';
import type { BenchStack } from './harness.js';
import { connectionCpuMs, processCpuMs } from './process-cpu.js';

/** Per delivery: Redis commands, PostgreSQL transactions and tuples written, CPU ms by process. */
export interface DeliveryCost {
  deliveries: number;
  redisCommands: number;
  /** The commands most called, per delivery, most first (at most 10; the tables show 5). */
  topRedisCommands: Record<string, number>;
  pgTransactions: number;
  pgTuplesWritten: number;
  cpuMs: { api: number; workers: number; redis: number; postgres: number; total: number };
}

interface Counters {
  commands: Map<string, number>;
  transactions: number;
  tuples: number;
  cpuMs: { api: number; workers: number; redis: number; postgres: number };
}

/**
 * CPU ms used by every process named `postgres`: those running, and through the postmaster's
 * reaped children, the backends that exited meanwhile (a connection closed by a pool).
 */
async function postgresCpuMs(): Promise<number> {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = (await readFile(`/proc/${entry}/comm`, 'utf8')).trim();
      if (comm === 'postgres') total += await processCpuMs(Number(entry), true);
    } catch {
      // Exited meanwhile.
    }
  }
  return total;
}

/**
 * Starts counting for `stack`; `stop(deliveries, uncountedPostgresCpuMs)` returns the cost per
 * delivery since. PostgreSQL's CPU leaves out the probe's own connection and
 * `uncountedPostgresCpuMs` (the bench's polling, `waitForSucceeded`'s `onPollCpuMs`), which are
 * the bench's work, not the service's.
 */
export async function startCostProbe(stack: BenchStack) {
  const redis = new Redis(stack.redisUrl);
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  // A scenario that throws drops its stack's database under the probe: the throw is the failure
  // to report, not the probe's connection ending with it (an unhandled 'error' ends the process).
  db.on('error', () => undefined);
  redis.on('error', () => undefined);
  await db.connect();
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const read = async (): Promise<Counters> => {
    const commands = new Map<string, number>();
    for (const match of (await redis.info('commandstats')).matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
      commands.set(match[1]!, Number(match[2]));
    }
    const {
      rows: [stats],
    } = await db.query<{ transactions: string; tuples: string }>(
      `SELECT (xact_commit + xact_rollback)::text AS transactions,
              (tup_inserted + tup_updated + tup_deleted)::text AS tuples
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    const workers = await Promise.all(stack.workers.map((worker) => processCpuMs(worker.child.pid)));
    return {
      commands,
      transactions: Number(stats!.transactions),
      tuples: Number(stats!.tuples),
      cpuMs: {
        api: await processCpuMs(stack.api.child.pid),
        workers: workers.reduce((a, b) => a + b, 0),
        redis: await processCpuMs(redisPid),
        postgres: (await postgresCpuMs()) - (await connectionCpuMs(db)),
      },
    };
  };
  const before = await read();
  return {
    async stop(deliveries: number, uncountedPostgresCpuMs = 0): Promise<DeliveryCost> {
      // pg_stat_database takes up to a second to show the last commits.
      await sleep(1_500);
      const after = await read();
      await db.end();
      redis.disconnect();
      const per = (n: number) => n / deliveries;
      const commandDeltas = [...after.commands].map(
        ([name, calls]) => [name, calls - (before.commands.get(name) ?? 0)] as const,
      );
      const cpu = {
        api: per(after.cpuMs.api - before.cpuMs.api),
        workers: per(after.cpuMs.workers - before.cpuMs.workers),
        redis: per(after.cpuMs.redis - before.cpuMs.redis),
        postgres: per(after.cpuMs.postgres - before.cpuMs.postgres - uncountedPostgresCpuMs),
      };
      return {
        deliveries,
        redisCommands: per(commandDeltas.reduce((sum, [, calls]) => sum + calls, 0)),
        topRedisCommands: Object.fromEntries(
          commandDeltas
            .sort((a, b) => b[1] - a[1])
            .slice(0, 10)
            .map(([name, calls]) => [name, Number(per(calls).toFixed(1))]),
        ),
        pgTransactions: per(after.transactions - before.transactions),
        pgTuplesWritten: per(after.tuples - before.tuples),
        cpuMs: { ...cpu, total: cpu.api + cpu.workers + cpu.redis + cpu.postgres },
      };
    },
  };
}
