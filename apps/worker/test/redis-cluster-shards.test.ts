/**
 * Sharded queues (QUEUE_SHARDS=6) on a private Redis Cluster of three masters, each with a
 * replica (REDIS_WAIT_REPLICAS=1, `WAIT` on the master of the event's shard): a burst's Redis
 * commands and keys spread over every master.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { shares } from '../../../scripts/lib/stats.js';
import {
  commandsRun,
  onNode,
  startPrivateRedisCluster,
  type PrivateRedisCluster,
} from '../../../scripts/lib/private-redis-cluster.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let cluster: PrivateRedisCluster;
let stack: TestStack;

beforeAll(async () => {
  cluster = await startPrivateRedisCluster(1, { nodeTimeoutMs: 15_000 });
  stack = await startTestStack('shards', {
    REDIS_CLUSTER_NODES: cluster.nodes,
    QUEUE_SHARDS: '6',
    REDIS_WAIT_REPLICAS: '1',
    RATE_LIMIT_PER_MINUTE: '1000000',
    DELIVERY_BACKOFF_MS: '100',
    // The reconciler at its defaults: run every 500 ms with a 1 s grace, it scanned every pending
    // delivery of the burst over and over, and on a slow machine slowed the drain it waited for.
  });
}, 90_000);
afterAll(async () => {
  await stack?.close();
  await cluster?.destroy();
});

describe('sharded queues on a three-master Redis Cluster', () => {
  it('spreads the commands and keys of a burst of 10,080 deliveries over every master', async () => {
    // One account per shard: an account's events all go to its shard, so a handful of accounts
    // picked at random may share one (a real deployment's thousands of accounts spread).
    const { shards } = stack.api.config;
    const accounts = Array.from({ length: shards.count }, (_, shard) => {
      for (let i = 0; ; i++) if (shards.ofAccount(`acct-${i}`) === shard) return `acct-${i}`;
    });
    // Four subscriptions per shard as well: with 24 drawn at random, one master's share of the
    // commands or keys fell to 19.7% in a CI run. A subscription whose shard is full already is
    // deleted and drawn again.
    const perShard = Array.from({ length: shards.count }, () => 0);
    for (const account of accounts)
      for (let kept = 0; kept < 4;) {
        const created = await stack.subscribe(account, {
          callback_url: `${stack.receiver.url}/spread/${account}/${kept}`,
        });
        const shard = shards.ofSubscription(created.id);
        if (perShard[shard]! < 4) {
          perShard[shard]! += 1;
          kept += 1;
        } else {
          const deleted = await stack.api.app.inject({
            method: 'DELETE',
            url: created.resource_uri,
            headers: stack.api.auth(account),
          });
          expect(deleted.statusCode).toBe(204);
        }
      }
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    await Promise.all(masters.map(({ port }) => onNode(port, (node) => node.config('RESETSTAT'))));

    const published = new Set<string>();
    for (const account of accounts) {
      const events = await Promise.all(
        Array.from({ length: 420 }, (_, i) =>
          stack.publisher.publish({ accountId: account, type: 'call.started', data: { call_id: `c-${i}` } }),
        ),
      );
      for (const { id } of events) published.add(id);
    }
    const spread = () => stack.receiver.requests.filter((request) => request.path.startsWith('/spread/'));
    // On a timeout, the message tells a stall from a slow drain (arrivals every 20 s) and names
    // the accounts short of their 1,680 deliveries.
    const progress: number[] = [];
    const sampler = setInterval(() => progress.push(spread().length), 20_000);
    try {
      await waitFor('10,080 deliveries', () => spread().length >= 10_080, 360_000);
    } catch (error) {
      const now = await cluster.masters().catch(() => []);
      const short = accounts
        .map((account) => [account, spread().filter((r) => r.path.startsWith(`/spread/${account}/`)).length])
        .filter(([, count]) => count !== 1_680);
      throw new Error(
        `${String(error)}: ${spread().length} arrived (every 20 s: ${progress.join(', ')}); short: ${JSON.stringify(short)}; masters now on ports ${now.map(({ port }) => port).join(', ')}, before ${masters.map(({ port }) => port).join(', ')}`,
      );
    } finally {
      clearInterval(sampler);
    }
    const received = spread();
    expect(
      new Set(received.map((request) => `${request.path} ${String(request.headers['webhook-id'])}`)).size,
    ).toBe(10_080);
    expect(new Set(received.map((request) => String(request.headers['webhook-id'])))).toEqual(published);
    const commands = shares(await Promise.all(masters.map(({ port }) => commandsRun(port))));
    const keys = shares(await Promise.all(masters.map(({ port }) => onNode(port, (node) => node.dbsize()))));
    for (const fraction of keys) {
      expect(fraction).toBeGreaterThanOrEqual(0.2);
      expect(fraction).toBeLessThanOrEqual(0.47);
    }
    // Every delivery here goes to one callback host, whose cap is one key on one master: two
    // commands of each attempt go there whatever the shards, so its master runs a little more.
    for (const fraction of commands) {
      expect(fraction).toBeGreaterThanOrEqual(0.2);
      expect(fraction).toBeLessThanOrEqual(0.55);
    }
  }, 420_000);
});
