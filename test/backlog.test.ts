/**
 * The backlog bound through the API and a worker: past BACKLOG_MAX_EVENTS waiting events,
 * `POST /api/events` and test events answer 503 with `Retry-After` and accept nothing, until the
 * worker has drained the backlog; past BACKLOG_MAX_DELIVERIES, the accounts that filled it are
 * refused first, their deliveries parked for a retry counted with those waiting. (The pure rules are apps/api/test/backlog-rules.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { queueLayout, queueNames, schedulerEntriesKey } from '@webhooks/shared';
import { loadWorkerConfig, startWorker, type RunningWorker } from '@webhooks/worker';
import { startTestApi, testEnv, type TestApi } from './support/api.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { startReceiver, type Receiver } from '../scripts/lib/receiver.js';
import { testRedisUrl } from './support/redis.js';
import { waitFor } from '../scripts/lib/wait.js';

describe('POST /api/events past BACKLOG_MAX_EVENTS', () => {
  let api: TestApi;
  let redis: Redis;
  let events: Queue;
  let worker: RunningWorker | undefined;
  beforeAll(async () => {
    api = await startTestApi('backlog', { BACKLOG_MAX_EVENTS: '5' });
    redis = new Redis(testRedisUrl);
    events = new Queue(queueNames.events, { connection: redis, prefix: api.prefix });
  });
  afterAll(async () => {
    await worker?.close();
    await events.close();
    redis.disconnect();
    await api.close();
  });

  const publish = (seq: number) =>
    api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: api.auth('acct-backlog'),
      payload: { type: 'call.started', data: { seq } },
    });

  it('answers 503 with Retry-After once the backlog is full, accepting nothing, and accepts again once it drained', async () => {
    // No worker yet: every accepted event waits. The bound is read in the background, so a few
    // more than 5 may be accepted before the first refusal.
    let seq = 0;
    const refused = await waitFor('a refusal', async () => {
      const response = await publish(seq++);
      return response.statusCode === 503 ? response : undefined;
    });
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toMatchObject({ type: '/problems/backlog-full', status: 503 });
    expect(refused.json().detail).toMatch(/BACKLOG_MAX_EVENTS 5/);
    const waiting = await events.getWaitingCount();
    expect(waiting).toBeGreaterThanOrEqual(5);
    expect((await publish(seq++)).statusCode).toBe(503);
    // A test event is an event too: refused the same way, and nothing queued.
    const subscription = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('acct-backlog'),
      payload: { callback_url: 'https://hooks.example.com/backlog' },
    });
    const test = await api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${subscription.json().id}/test-events`,
      headers: api.auth('acct-backlog'),
    });
    expect(test.statusCode).toBe(503);
    expect(test.json()).toMatchObject({ type: '/problems/backlog-full' });
    expect(await events.getWaitingCount()).toBe(waiting);

    worker = startWorker(loadWorkerConfig(testEnv(api.database.url, api.prefix)), pino({ level: 'silent' }));
    await waitFor(
      'the backlog drained and events accepted again',
      async () => (await publish(seq++)).statusCode === 202,
    );
  });
});

describe('past BACKLOG_MAX_DELIVERIES', () => {
  let api: TestApi;
  let worker: RunningWorker;
  beforeAll(async () => {
    const env = {
      BACKLOG_MAX_DELIVERIES: '300',
      BACKLOG_MAX_EVENTS: '0',
      DELIVERY_QUEUE_TARGET: '10',
      // The fan-out alone: deliveries are scheduled and admitted, and none is sent, so the backlog stays.
      WORKER_QUEUES: 'events',
      CALLBACK_ALLOW_PRIVATE: 'true',
    };
    api = await startTestApi('backlog-fair', env);
    worker = startWorker(
      loadWorkerConfig(testEnv(api.database.url, api.prefix, env)),
      pino({ level: 'silent' }),
    );
  });
  afterAll(async () => {
    await worker.close();
    await api.close();
  });

  const call = (account: string, method: 'POST', url: string, payload: object) =>
    api.app.inject({ method, url, headers: api.auth(account), payload });

  it('refuses the account that filled it, and still accepts a quiet account', async () => {
    for (let i = 0; i < 10; i++)
      await call('acct-flood', 'POST', '/api/webhooks', {
        callback_url: `https://hooks.example.com/flood/${i}`,
      });
    await call('acct-quiet', 'POST', '/api/webhooks', { callback_url: 'https://hooks.example.com/quiet' });
    const publish = (account: string) =>
      call(account, 'POST', '/api/events', { type: 'call.started', data: {} });

    // Ten deliveries an event: the flood passes the bound within a few events of the sample.
    const refused = await waitFor('the flood refused', async () => {
      const response = await publish('acct-flood');
      return response.statusCode === 503 ? response : undefined;
    });
    expect(refused.json()).toMatchObject({ type: '/problems/backlog-full' });
    expect(refused.json().detail).toMatch(/this account's, over its share/);
    const quiet = [];
    for (let i = 0; i < 3; i++) quiet.push((await publish('acct-quiet')).statusCode);
    expect(quiet).toEqual([202, 202, 202]);
    expect((await publish('acct-flood')).statusCode).toBe(503);
  });
});

describe('past BACKLOG_MAX_DELIVERIES, with deliveries parked for their retries', () => {
  let stack: TestStack;
  let failing: Receiver;
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(testRedisUrl);
    stack = await startTestStack('backlog-parked', {
      BACKLOG_MAX_DELIVERIES: '40',
      BACKLOG_MAX_EVENTS: '0',
      // Every failed attempt waits its backoff in BullMQ's delayed set for the whole test.
      DELIVERY_BACKOFF_MS: '600000',
    });
    failing = await startReceiver({ answer: { status: 500 } });
  });
  afterAll(async () => {
    await stack.close();
    await failing.close();
    await redis.quit();
  });

  const publish = (account: string, type = 'call.started') =>
    stack.api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: stack.api.auth(account),
      payload: { type, data: type === 'call.started' ? {} : { message_id: 'm-1', text: 'probe' } },
    });

  it('counts an account whose callbacks fail by its retries waiting their backoff, and refuses it first', async () => {
    for (let i = 0; i < 5; i++)
      await stack.subscribe('acct-failing', { callback_url: `${failing.url}/failing/${i}` }, 'calls');
    await stack.subscribe('acct-calm', { callback_url: `${stack.receiver.url}/calm` });

    // Each event's five deliveries fail at once and wait their backoff in BullMQ's delayed set:
    // nothing waits for a worker, so only the parked retries can fill the bound (40). The API
    // reads the backlog every so often, so publishes go on being accepted for a while past the
    // bound. A delivery is counted twice for a moment, held by the account scheduler until its
    // parked job exists: each event is published once the one before is parked and no longer
    // held, so at most one event's five deliveries are counted twice, and 14 events (70
    // deliveries, 75 at that moment) stay under the hard ceiling (80, where every account is
    // refused), whatever the machine's speed. Past them, a message event (which none of the
    // account's call subscriptions receives, so it adds nothing) asks until the API's reading
    // refuses it.
    const deliveries = queueLayout(stack.api.prefix, queueNames.deliveries);
    const parkedOnly = async (count: number) =>
      (await redis.hlen(schedulerEntriesKey(stack.api.prefix))) === 0 &&
      (await redis.zcard(deliveries.delayed)) === count;
    let refused;
    for (let accepted = 0; refused === undefined && accepted < 14;) {
      const response = await publish('acct-failing');
      if (response.statusCode === 503) refused = response;
      else {
        accepted += 1;
        await waitFor('its deliveries parked for their retries', () => parkedOnly(5 * accepted));
      }
    }
    refused ??= await waitFor('the failing account refused', async () => {
      const response = await publish('acct-failing', 'message.sent');
      return response.statusCode === 503 ? response : undefined;
    });
    expect(refused.json()).toMatchObject({ type: '/problems/backlog-full' });
    expect(refused.json().detail).toMatch(/this account's, over its share/);
    expect(failing.requests.length).toBeGreaterThan(0);
    const calm = [];
    for (let i = 0; i < 3; i++) calm.push((await publish('acct-calm')).statusCode);
    expect(calm).toEqual([202, 202, 202]);
    await waitFor('the calm account delivered', () => stack.receiver.at('/calm').length === 3);
    expect((await publish('acct-failing')).statusCode).toBe(503);
  });
});
