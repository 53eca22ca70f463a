import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { EventJobData } from '@webhooks/shared';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { testRedisUrl } from '../../../test/support/redis.js';

let api: TestApi;
let redis: Redis;
let events: Queue<EventJobData>;
beforeAll(async () => {
  api = await startTestApi('events');
  redis = new Redis(testRedisUrl);
  events = new Queue('events', { connection: redis, prefix: api.prefix });
});
afterAll(async () => {
  await events.close();
  redis.disconnect();
  await api.close();
});

const publish = (payload: unknown, account = 'pub', headers: Record<string, string> = {}) =>
  api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: { ...api.auth(account), ...headers },
    payload: payload as object,
  });

describe('POST /api/events', () => {
  it('accepts an event: 202 with its id and payload timestamp, one job queued for the account', async () => {
    const before = await events.count();
    const response = await publish({
      type: 'call.completed',
      data: { call_id: 'x' },
      occurred_at: '2026-11-21T11:15:30.5+01:00',
    });
    expect(response.statusCode).toBe(202);
    const body = response.json();
    expect(body).toMatchObject({ timestamp: '2026-11-21T10:15:30.500', duplicate: false });
    const job = await events.getJob(body.id);
    expect(job?.data).toEqual({
      id: body.id,
      accountId: 'pub',
      type: 'call.completed',
      data: { call_id: 'x' },
      timestamp: '2026-11-21T10:15:30.500',
      requestId: response.headers['x-request-id'],
    });
    expect(await events.count()).toBe(before + 1);
  });

  it('returns the first event for a repeated idempotency key and queues nothing', async () => {
    const first = (await publish({ type: 'message.sent', data: {}, idempotency_key: 'order-1' })).json();
    const before = await events.count();
    const second = await publish({ type: 'message.sent', data: { other: true }, idempotency_key: 'order-1' });
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual({ ...first, duplicate: true });
    expect(await events.count()).toBe(before);
    const otherAccount = (
      await publish({ type: 'message.sent', data: {}, idempotency_key: 'order-1' }, 'someone-else')
    ).json();
    expect(otherAccount.id).not.toBe(first.id);
  });

  it('takes the Idempotency-Key header as the key, the same as the body field', async () => {
    const key = { 'idempotency-key': 'order-header-1' };
    const first = (await publish({ type: 'message.sent', data: {} }, 'pub', key)).json();
    expect(first.duplicate).toBe(false);
    const before = await events.count();
    const byHeader = await publish({ type: 'message.sent', data: { other: true } }, 'pub', key);
    expect(byHeader.json()).toEqual({ ...first, duplicate: true });
    const byBody = await publish({ type: 'message.sent', data: {}, idempotency_key: 'order-header-1' });
    expect(byBody.json()).toEqual({ ...first, duplicate: true });
    expect(await events.count()).toBe(before);
  });

  it.each([
    ['a body key that differs from the header', { idempotency_key: 'a' }, 'b', '/idempotency_key'],
    ['a header key over 255 characters', {}, 'k'.repeat(256), '/idempotency-key'],
  ])('refuses %s (400) naming the field and queues nothing', async (_, body, header, pointer) => {
    const before = await events.count();
    const response = await publish({ type: 'message.sent', data: {}, ...body }, 'pub', {
      'idempotency-key': header,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { pointer: string }) => e.pointer)).toEqual([pointer]);
    expect(await events.count()).toBe(before);
  });

  const invalid: Array<[string, unknown, number, string]> = [
    ['an unknown type', { type: 'call.exploded', data: {} }, 400, '/type'],
    ['a missing type', { data: {} }, 400, '/type'],
    ['data that is not an object', { type: 'call.started', data: [1, 2] }, 400, '/data'],
    ['a bad occurred_at', { type: 'call.started', data: {}, occurred_at: 'yesterday' }, 400, '/occurred_at'],
    ['an unknown field', { type: 'call.started', data: {}, extra: 1 }, 400, '/extra'],
    ['data over 256 KiB', { type: 'call.started', data: { blob: 'x'.repeat(300 * 1024) } }, 413, '/data'],
  ];
  it.each(invalid)(
    'refuses %s (%i) naming the field and queues nothing',
    async (_, payload, status, pointer) => {
      const before = await events.count();
      const response = await publish(payload);
      expect(response.statusCode).toBe(status);
      expect(response.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
      expect(await events.count()).toBe(before);
    },
  );
});

describe('GET /api/event-types', () => {
  it('lists every kind with its endpoint, types and example data of each type', async () => {
    const response = await api.app.inject({
      method: 'GET',
      url: '/api/event-types',
      headers: api.auth('pub'),
    });
    expect(response.statusCode).toBe(200);
    const { kinds } = response.json();
    expect(kinds.map((k: { kind: string }) => k.kind)).toEqual(['calls', 'messages', 'operational']);
    expect(kinds[0]).toMatchObject({
      subscribe_uri: '/api/webhooks/calls',
      types: ['call.started', 'call.completed', 'call.failed'],
    });
    expect(kinds.flatMap((k: { types: string[] }) => k.types)).toEqual([
      ...['call.started', 'call.completed', 'call.failed'],
      ...['message.sent', 'message.received', 'message.failed'],
      ...['subscription.disabled', 'subscription.failing', 'subscription.recovered'],
    ]);
    expect(kinds[0].event_types[1]).toMatchObject({
      type: 'call.completed',
      description: expect.any(String),
      schema: { type: 'object' },
      deprecated: false,
    });
    expect(kinds[0].example_data['call.completed']).toMatchObject({ call_id: expect.any(String) });
    for (const kind of kinds) expect(Object.keys(kind.example_data)).toEqual(kind.types);
  });
});
