/**
 * The consumer watchdog: its rule, and a wedge reproduced without load against the real Redis,
 * PostgreSQL and a receiver. A worker whose Redis connections pass through a proxy has its
 * consumers' connections frozen (open and silent, as a wedged client is); events published then
 * wait in their queue with every slot free. The watchdog closes and restarts each consumer,
 * counting and logging it by shard, and every event is delivered.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { loadWorkerConfig, startWorker, type RunningWorker } from '@webhooks/worker';
import type { EventPublisher } from '@webhooks/shared';
import { isWedged } from '../src/consumer-watchdog.js';
import { consumerConnectionName } from '../src/worker.js';
import {
  publisherFor,
  startTestApi,
  subscribeThrough,
  testEnv,
  type TestApi,
} from '../../../test/support/api.js';
import { startFreezingProxy, type FreezingProxy } from '../../../test/support/freezing-proxy.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { waitFor } from '../../../scripts/lib/wait.js';

describe('isWedged', () => {
  const sample = { waiting: 3, running: 0, concurrency: 5, paused: false, lastProgressMs: 0, nowMs: 1_000 };
  it('holds when waiting work with free slots has gone untaken for the bound', () => {
    expect(isWedged(sample, 1_000)).toBe(true);
    expect(isWedged({ ...sample, nowMs: 999 }, 1_000)).toBe(false);
  });
  it('does not hold with nothing waiting, every slot taken, or the consumer paused', () => {
    expect(isWedged({ ...sample, waiting: 0 }, 1_000)).toBe(false);
    expect(isWedged({ ...sample, running: 5 }, 1_000)).toBe(false);
    expect(isWedged({ ...sample, paused: true }, 1_000)).toBe(false);
  });
});

describe('a consumer whose blocking connection wedged', () => {
  let api: TestApi;
  let proxy: FreezingProxy;
  let receiver: Receiver;
  let worker: RunningWorker;
  let publisher: EventPublisher;
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const env = { CALLBACK_ALLOW_PRIVATE: 'true', WORKER_WATCHDOG_MS: '1000' };
    api = await startTestApi('watchdog', env);
    proxy = await startFreezingProxy(6379);
    receiver = await startReceiver();
    publisher = publisherFor(api);
    const log = pino(
      { level: 'warn' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    worker = startWorker(
      loadWorkerConfig(testEnv(api.database.url, api.prefix, { ...env, REDIS_URL: proxy.url })),
      log,
    );
  }, 60_000);
  afterAll(async () => {
    // The wedged Workers' close waits on their connections.
    proxy.thaw();
    await worker.close();
    await publisher.close();
    await receiver.close();
    await proxy.close();
    await api.close();
  });

  it('is closed and started again, and delivers every event that waited', async () => {
    const account = 'acct-watchdog';
    await subscribeThrough(api, account, { callback_url: `${receiver.url}/watched` });
    await publisher.publish({ accountId: account, type: 'call.completed', data: { n: 0 } });
    await waitFor('the first delivery', () => receiver.at('/watched').length === 1);
    // Every consumer's blocking connection, each waiting on its queue's marker.
    // The consumers' shared connection and their blocking ones go silent, as a wedged client does.
    expect(proxy.freeze(consumerConnectionName)).toBe(1);
    // A blocking connection between two waits has nothing to freeze yet: the next one's wait.
    await waitFor('a blocking connection frozen', () => proxy.freeze('bzpopmin') > 0);
    for (let n = 1; n <= 5; n += 1)
      await publisher.publish({ accountId: account, type: 'call.completed', data: { n } });
    await waitFor('every event delivered', () => receiver.at('/watched').length === 6, 30_000);
    const restarts = (await worker.metrics.getSingleMetric('webhook_worker_consumer_restarts_total')!.get())
      .values;
    expect(restarts.reduce((sum, value) => sum + value.value, 0)).toBeGreaterThan(0);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          msg: 'consumer took no waiting job within WORKER_WATCHDOG_MS: closed and started again',
          queue: 'events',
          shard: expect.any(String),
        }),
      ]),
    );
    const bodies = receiver.at('/watched').map((request) => JSON.parse(request.body).data.n as number);
    expect(bodies.sort()).toEqual([0, 1, 2, 3, 4, 5]);
  }, 60_000);
});
