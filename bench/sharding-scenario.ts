/**
 * Sharded queues on a private Redis Cluster of three masters (no replicas): the end-to-end load
 * with `QUEUE_SHARDS=6` against the same load with the default `QUEUE_SHARDS=1` on a cluster of
 * its own, in the same run. Each run reports deliveries/s and each master's share of the Redis
 * commands the service ran (`INFO commandstats` after `CONFIG RESETSTAT`, the commands inside
 * scripts included). On one machine the three masters share its cores, so the throughput ratio
 * shows what sharding costs or saves there, not what three hosts would carry.
 */
import { commandsRun, onNode, startPrivateRedisCluster } from '../scripts/lib/private-redis-cluster.js';
import { shares } from '../scripts/lib/stats.js';
import { measureDeliveries, type DeliveryLoad, type Progress } from './delivery-scenarios.js';
import { withBenchStack } from './harness.js';

/** One load on the cluster: deliveries/s, and each master's fraction (0..1) of the commands. */
export interface ClusterRun {
  shards: number;
  deliveriesPerSecond: number;
  deliveries: number;
  /** One per master, highest first. */
  commandShares: number[];
}

/** Runs `load` with `shards` queue shards on a fresh three-master cluster. */
async function onCluster(shards: number, load: DeliveryLoad, progress: Progress): Promise<ClusterRun> {
  const cluster = await startPrivateRedisCluster();
  try {
    const name = `sharded-${shards}`;
    const env = { REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_SHARDS: String(shards) };
    return await withBenchStack({ tag: name, env }, async (stack, publisher, receiver) => {
      const masters = await cluster.masters();
      await Promise.all(masters.map(({ port }) => onNode(port, (node) => node.config('RESETSTAT'))));
      const run = await measureDeliveries(name, stack, publisher, receiver, load, progress);
      const commands = await Promise.all(masters.map(({ port }) => commandsRun(port)));
      return {
        shards,
        deliveriesPerSecond: run.deliveriesPerSecond,
        deliveries: run.deliveries,
        commandShares: shares(commands).sort((a, b) => b - a),
      };
    });
  } finally {
    await cluster.destroy();
  }
}

/**
 * The number of accounts, one subscription each. A delivery's queue is its subscription's shard,
 * picked by the hash of its random id: 20 subscriptions put over 47% of the deliveries on one of
 * three masters about one run in four; 100 make that about one in two hundred.
 */
const shardedAccounts = 100;

/**
 * The end-to-end load (`events` over {@link shardedAccounts} accounts, one subscription each) on
 * a three-master cluster, sharded in six and unsharded.
 */
export async function shardedQueues(
  events: number,
  progress: Progress,
): Promise<{ sharded: ClusterRun; unsharded: ClusterRun }> {
  const load = { events, accounts: shardedAccounts, subscriptions: 1 };
  const unsharded = await onCluster(1, load, progress);
  const sharded = await onCluster(6, load, progress);
  return { sharded, unsharded };
}
