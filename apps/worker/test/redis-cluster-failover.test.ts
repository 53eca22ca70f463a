/**
 * A Redis Cluster master killed with SIGKILL in the middle of a burst, with sharded queues
 * (QUEUE_SHARDS=6) on three masters with a replica each: no event the API accepted is lost
 * (REDIS_WAIT_REPLICAS=1, `WAIT` on the master of the event's shard), every publish is answered
 * 202, or 503 with `Retry-After`, within the API's Redis timeout and a second, and the worker, a
 * process of its own as deployed, still stops on SIGTERM afterwards. (In-process, closing BullMQ's
 * workers after a failover could wait for ever; a process ends within its grace period whatever
 * its connections do.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defaultPublishTimeoutMs } from '@webhooks/shared';
import {
  startPrivateRedisCluster,
  type PrivateRedisCluster,
} from '../../../scripts/lib/private-redis-cluster.js';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { deliveredEventIds, startPublishBurst } from '../../../test/support/publish-burst.js';
import { waitFor } from '../../../test/support/wait.js';
import { spawnWorker, type WorkerProcess } from '../../../test/support/worker-process.js';

let cluster: PrivateRedisCluster;
let api: TestApi;
let receiver: Receiver;
let worker: WorkerProcess;

beforeAll(async () => {
  cluster = await startPrivateRedisCluster(1);
  const env = {
    REDIS_CLUSTER_NODES: cluster.nodes,
    QUEUE_SHARDS: '6',
    REDIS_WAIT_REPLICAS: '1',
    RATE_LIMIT_PER_MINUTE: '1000000',
    CALLBACK_ALLOW_PRIVATE: 'true',
    DELIVERY_BACKOFF_MS: '100',
    RECONCILE_INTERVAL_MS: '500',
    RECONCILE_GRACE_MS: '1000',
  };
  api = await startTestApi('failover', env);
  receiver = await startReceiver();
  worker = spawnWorker({ ...testEnv(api.database.url, api.prefix, env), LOG_LEVEL: 'info' });
  await waitFor(
    'the worker to log its start',
    () => worker.output.join('').includes('worker started'),
    30_000,
  );
}, 90_000);
afterAll(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.exited;
  await receiver?.close();
  await api?.close();
  await cluster?.destroy();
});

describe('a Redis Cluster master killed mid-burst', () => {
  it('delivers every event accepted during the burst, and answers every publish in time', async () => {
    const accounts = ['acct-f1', 'acct-f2', 'acct-f3', 'acct-f4'];
    for (const account of accounts) {
      const subscribed = await api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: api.auth(account),
        payload: { callback_url: `${receiver.url}/failover/${account}` },
      });
      expect(subscribed.statusCode).toBe(201);
    }
    const burst = startPublishBurst(api, accounts);
    const { accepted, refused } = burst;
    await waitFor('events accepted before the kill', () => accepted.length >= 200);
    const [victim] = await cluster.masters();
    await cluster.kill(victim!.port);
    const acceptedAtKill = accepted.length;
    await waitFor(
      'a replica promoted',
      async () => !(await cluster.masters()).some(({ port }) => port === victim!.port),
      30_000,
    );
    await waitFor(
      'events accepted after the failover',
      () => accepted.length >= acceptedAtKill + 200,
      30_000,
    );
    await burst.stop();

    expect(await cluster.masters()).toHaveLength(3);
    for (const { status, retryAfter } of refused) {
      expect(status).toBe(503);
      expect(retryAfter).toBeDefined();
    }
    expect(burst.slowestMs()).toBeLessThanOrEqual(defaultPublishTimeoutMs + 1_000);
    await waitFor(
      'every accepted event delivered',
      () => {
        const ids = deliveredEventIds(
          receiver.requests.filter((request) => request.path.startsWith('/failover/')),
        );
        return accepted.every((id) => ids.has(id));
      },
      60_000,
    );
  }, 180_000);
});
