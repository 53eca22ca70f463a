/**
 * Which queue shards cannot take publishes: their master has fewer replicas than
 * REDIS_WAIT_REPLICAS (docs/operations.md, "A lost Redis replica"). Sampled with `ROLE`, so the API
 * refuses them at once instead of after `WAIT` times out, and `/readyz` and the metrics name them.
 */
import type { RedisConnection } from './redis.js';

/** What the last sample found for one shard. */
export interface ShardReplicas {
  shard: number;
  /** Replicas connected to the shard's master, or null when the master did not answer. */
  replicas: number | null;
}

/** A running watch. */
export interface ReplicaWatch {
  /** The last sample, by shard (every shard `null` before the first one ends). */
  current(): readonly ShardReplicas[];
  /** Whether `shard`'s master had too few replicas; one that did not answer is left to the publish's timeout. */
  refuses(shard: number): boolean;
  /** Samples now (the interval's samples call this). @returns the new sample; never throws */
  sample(): Promise<readonly ShardReplicas[]>;
  /** Stops sampling. */
  stop(): void;
}

export interface ReplicaWatchOptions {
  connection: RedisConnection;
  /** A key of each shard, by shard number: `ROLE` goes to the master that holds it. */
  shardKeys: readonly string[];
  /** REDIS_WAIT_REPLICAS: a shard whose master has fewer refuses publishes. */
  required: number;
  /** How often to sample, in ms. */
  intervalMs: number;
  /** Called with each shard whose state changed (refusing or taking publishes again). */
  onChange?(shard: ShardReplicas, refusing: boolean): void;
}

/** Replicas a `ROLE` reply names: `['master', offset, [[host, port, offset], …]]`. */
export function replicasOfRole(role: unknown): number | null {
  if (!Array.isArray(role) || role[0] !== 'master' || !Array.isArray(role[2])) return null;
  return role[2].length;
}

/** Whether a shard with `replicas` refuses publishes that wait for `required` replicas. */
export function refusesPublishes(replicas: number | null, required: number): boolean {
  return replicas !== null && replicas < required;
}

/** Starts sampling at once, then every `intervalMs` (the timer does not keep the process alive). */
export function watchReplicas(options: ReplicaWatchOptions): ReplicaWatch {
  const { connection, shardKeys, required } = options;
  let last: ShardReplicas[] = shardKeys.map((_, shard) => ({ shard, replicas: null }));
  const roleOf = async (key: string): Promise<number | null> => {
    try {
      // ROLE names no key: on a Cluster it rides behind a command on `key` to that key's master.
      const answers = await connection.pipeline().exists(key).role().exec();
      const [error, role] = answers?.[1] ?? [new Error('no answer to ROLE'), null];
      return error ? null : replicasOfRole(role);
    } catch {
      return null;
    }
  };
  const sample = async () => {
    const next = await Promise.all(
      shardKeys.map(async (key, shard) => ({ shard, replicas: await roleOf(key) })),
    );
    for (const now of next) {
      const before = refusesPublishes(last[now.shard]!.replicas, required);
      const after = refusesPublishes(now.replicas, required);
      if (before !== after) options.onChange?.(now, after);
    }
    last = next;
    return next;
  };
  const timer = setInterval(() => void sample(), options.intervalMs);
  timer.unref();
  void sample();
  return {
    current: () => last,
    refuses: (shard) => refusesPublishes(last[shard]?.replicas ?? null, required),
    sample,
    stop: () => clearInterval(timer),
  };
}
