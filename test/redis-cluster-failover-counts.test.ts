/**
 * The counting connection (`createPipelinedConnection`: the API's rate limits and payload quota,
 * the worker's delivery gates) on a Redis Cluster whose master was failed over: the counts of
 * every queue shard, issued together as concurrent requests issue them, are all answered once the
 * replica is promoted, those of the failed-over master's shards by the new master. An
 * auto-pipelined batch spanning that master's slots would instead fail on every `MOVED` answer,
 * without refreshing the slot map, and those shards' accounts would get 503 for every write.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createPipelinedConnection,
  redisSettingsFromEnv,
  type QueueShards,
  type RedisConnection,
} from '@webhooks/shared';
import { startPrivateRedisCluster, type PrivateRedisCluster } from '../scripts/lib/private-redis-cluster.js';
import { waitFor } from '../scripts/lib/wait.js';

let cluster: PrivateRedisCluster;
let counts: RedisConnection;
let shards: QueueShards;

beforeAll(async () => {
  cluster = await startPrivateRedisCluster(1, { nodeTimeoutMs: 3_000 });
  // As the services read their configuration: six shards over the cluster's three masters.
  const settings = redisSettingsFromEnv({
    REDIS_URL: 'redis://127.0.0.1',
    REDIS_SENTINELS: '',
    REDIS_SENTINEL_NAME: 'mymaster',
    REDIS_CLUSTER_NODES: cluster.nodes,
    REDIS_WAIT_REPLICAS: 0,
    QUEUE_PREFIX: 'webhooks',
    QUEUE_SHARDS: 6,
  });
  shards = settings.shards;
  counts = createPipelinedConnection(settings.redis, 1_000);
  counts.on('error', () => {});
}, 90_000);
afterAll(async () => {
  counts?.disconnect();
  await cluster?.destroy();
});

/** A count per shard, all issued in one event-loop turn: each one's value or error. */
const countEveryShard = () =>
  Promise.all(
    shards.prefixes.map((prefix) =>
      counts.incr(`${prefix}:count`).then(
        () => 'counted',
        (error: unknown) => String(error),
      ),
    ),
  );

describe('the counting connection on a Redis Cluster whose master was failed over', () => {
  it("answers the counts of the failed-over master's shards from the promoted replica", async () => {
    expect(await countEveryShard()).toEqual(Array(6).fill('counted'));

    const [victim] = await cluster.masters();
    await cluster.kill(victim!.port);
    await waitFor(
      'a replica promoted',
      async () => !(await cluster.masters()).some(({ port }) => port === victim!.port),
      30_000,
    );

    let last: string[] = [];
    await waitFor(
      'every shard counted',
      async () => {
        last = await countEveryShard();
        return last.every((answer) => answer === 'counted');
      },
      30_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; the last answers: ${last.join(' | ')}`);
    });
  }, 120_000);
});
