/**
 * The backlog bound: past BACKLOG_MAX_EVENTS waiting events, `POST /api/events` and test events
 * answer 503 with `Retry-After` and accept nothing, until workers have drained the backlog; the
 * pure rule below.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { queueNames } from '@webhooks/shared';
import { loadWorkerConfig, startWorker, type RunningWorker } from '@webhooks/worker';
import { backlogRefusal } from '../src/lib/backlog.js';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { waitFor } from '../../../test/support/wait.js';

describe('the backlog rule', () => {
  it('refuses at either bound, names it, and never with a bound of 0', () => {
    const limits = { events: 10, deliveries: 100 };
    expect(backlogRefusal({ events: 9, deliveries: 99 }, limits)).toBeNull();
    expect(backlogRefusal({ events: 10, deliveries: 0 }, limits)).toMatch(/BACKLOG_MAX_EVENTS 10/);
    expect(backlogRefusal({ events: 0, deliveries: 100 }, limits)).toMatch(/BACKLOG_MAX_DELIVERIES 100/);
    expect(backlogRefusal({ events: 1e9, deliveries: 1e9 }, { events: 0, deliveries: 0 })).toBeNull();
  });
});

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
