/**
 * "What was seen": every case the outsider's probe found, against a listening API on
 * 127.0.0.1 with the real PostgreSQL and Redis.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createTokenMinter } from '../src/index.js';
import { startTestApi, testJwtSecret, type TestApi } from '../../../test/support/api.js';
import { rawRequest } from '../../../test/support/raw-http.js';
import { testRedisUrl } from '../../../test/support/redis.js';

let api: TestApi;
let port: number;
let redis: Redis;
let events: Queue;
let db: pg.Client;

beforeAll(async () => {
  api = await startTestApi('front-door', { RATE_LIMIT_PER_MINUTE: '1000' });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;
  redis = new Redis(testRedisUrl);
  events = new Queue('events', { connection: redis, prefix: api.prefix });
  db = new pg.Client({ connectionString: api.database.url });
  await db.connect();
});
afterAll(async () => {
  await events.close();
  redis.disconnect();
  await db.end();
  await api.close();
});

const json = (token?: string) => ({
  'content-type': 'application/json',
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
});

/** Rows and queued events: what a refused request must leave unchanged. */
async function footprint() {
  const { rows } = await db.query<{ subscriptions: string; events: string }>(
    'SELECT (SELECT count(*) FROM subscriptions) AS subscriptions, (SELECT count(*) FROM events) AS events',
  );
  return { ...rows[0], queued: await events.count() };
}

describe('authentication belongs to the route, whatever the spelling of its path', () => {
  const spellings = [
    '/%61pi/webhooks',
    '/api/%77ebhooks',
    '/api/webhooks/',
    '/API/webhooks',
    '//api/webhooks',
    '/x/../api/webhooks',
    '/api/./webhooks',
    'http://x/api/webhooks',
    'http://127.0.0.1/%61pi/webhooks',
  ];

  it.each(spellings)('POST %s without a token creates nothing', async (target) => {
    const before = await footprint();
    const response = await rawRequest(
      port,
      'POST',
      target,
      json(),
      JSON.stringify({ callback_url: 'https://example.com/h' }),
    );
    expect(response.status).not.toBe(201);
    expect([401, 404]).toContain(response.status);
    expect(await footprint()).toEqual(before);
  });

  it.each(spellings)('GET %s without a token reads nothing', async (target) => {
    const response = await rawRequest(port, 'GET', target);
    expect([401, 404]).toContain(response.status);
    expect(response.body).not.toContain('"results"');
  });

  it('answers the percent-encoded spelling of a route as that route, authenticated', async () => {
    const response = await rawRequest(port, 'GET', '/%61pi/webhooks', json(api.token('spelling')));
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ count: 0, results: [] });
  });

  it('counts every spelling against the account rate limit', async () => {
    const limited = await startTestApi('front-door-limit', { RATE_LIMIT_PER_MINUTE: '2' });
    try {
      await limited.app.listen({ host: '127.0.0.1', port: 0 });
      const limitedPort = (limited.app.server.address() as AddressInfo).port;
      const headers = json(limited.token('limited'));
      const statuses = [];
      for (const target of ['/%61pi/webhooks', 'http://x/api/webhooks', '/api/webhooks']) {
        statuses.push((await rawRequest(limitedPort, 'GET', target, headers)).status);
      }
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });

  it('cannot store a subscription or an event of an empty account, even bypassing the API', async () => {
    await expect(
      db.query(
        `INSERT INTO subscriptions (id, account_id, callback_url, secret, updated_at)
         VALUES (gen_random_uuid(), '', 'https://example.com/h', 'x', now())`,
      ),
    ).rejects.toThrow(/subscriptions_account_id_not_empty/);
    await expect(
      db.query(
        `INSERT INTO events (id, account_id, type, data, occurred_at) VALUES (gen_random_uuid(), '', 'call.completed', '{}', now())`,
      ),
    ).rejects.toThrow(/events_account_id_not_empty/);
  });
});

describe('tokens', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const get = (token: string) =>
    api.app.inject({ method: 'GET', url: '/api/webhooks', headers: { authorization: `Bearer ${token}` } });

  it.each([
    ['without exp', { exp: undefined }],
    ['expired beyond the 30 s clock skew', { exp: now() - 45 }],
    ['not valid for another minute', { nbf: now() + 60 }],
  ])('refuses a token %s with 401', async (_, claims) => {
    const response = await get(api.token('acme', claims));
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('accepts a token expired or not yet valid within the 30 s clock skew', async () => {
    expect((await get(api.token('acme', { exp: now() - 10 }))).statusCode).toBe(200);
    expect((await get(api.token('acme', { nbf: now() + 10 }))).statusCode).toBe(200);
  });

  it.each([
    ['a blank sub', ' '],
    ['an empty sub', ''],
    ['a sub with a control character', 'acme\u0007'],
    ['a sub with NUL', 'ac\u0000me'],
    ['a sub with a lone surrogate', 'acme\ud800'],
    ['a sub of 256 characters', 'a'.repeat(256)],
    ['a numeric sub', 42],
  ])('refuses %s with 401', async (_, sub) => {
    const response = await get(api.token('ignored', { sub }));
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/sub/);
  });

  it('accepts a sub of 255 characters', async () => {
    expect((await get(api.token('a'.repeat(255)))).statusCode).toBe(200);
  });

  it('verifies iss and aud when JWT_ISSUER and JWT_AUDIENCE are set', async () => {
    const strict = await startTestApi('front-door-iss', {
      JWT_ISSUER: 'https://id.example',
      JWT_AUDIENCE: 'webhooks',
    });
    try {
      const mint = createTokenMinter({ secret: testJwtSecret });
      const status = async (claims: Record<string, unknown>) =>
        (
          await strict.app.inject({
            method: 'GET',
            url: '/api/webhooks',
            headers: { authorization: `Bearer ${mint('acme', claims)}` },
          })
        ).statusCode;
      expect(await status({ iss: 'https://id.example', aud: 'webhooks' })).toBe(200);
      expect(await status({ iss: 'https://id.example', aud: ['other', 'webhooks'] })).toBe(200);
      expect(await status({ aud: 'webhooks' })).toBe(401);
      expect(await status({ iss: 'https://evil.example', aud: 'webhooks' })).toBe(401);
      expect(await status({ iss: 'https://id.example' })).toBe(401);
      expect(await status({ iss: 'https://id.example', aud: 'other' })).toBe(401);
    } finally {
      await strict.close();
    }
  });
});

describe('hostile input is refused with 400 naming the field, and changes nothing', () => {
  /** An event whose data is nested `depth` levels, as JSON text (too deep for JSON.stringify). */
  const nestedEvent = (depth: number) =>
    `{"type":"call.completed","data":${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}}`;

  it.each([
    ['NUL in a data value', '/api/events', { type: 'call.completed', data: { x: '\u0000' } }, '/data/x'],
    [
      'a lone surrogate in a data value',
      '/api/events',
      { type: 'call.completed', data: { x: '\ud800' } },
      '/data/x',
    ],
    ['NUL in a data key', '/api/events', { type: 'call.completed', data: { 'k\u0000': 1 } }, '/data/k\u0000'],
    [
      'a lone surrogate deep in an array',
      '/api/events',
      { type: 'call.completed', data: { a: [1, { b: '\udc00x' }] } },
      '/data/a/1/b',
    ],
    ['NUL in the type', '/api/events', { type: 'call.completed\u0000', data: {} }, '/type'],
    [
      'NUL in the idempotency key',
      '/api/events',
      { type: 'call.completed', data: {}, idempotency_key: 'k\u0000' },
      '/idempotency_key',
    ],
    ['data nested 33 levels', '/api/events', nestedEvent(33), '/data'],
    ['data nested 5,000 levels', '/api/events', nestedEvent(5000), '/data'],
    [
      'NUL in webhook_id',
      '/api/webhooks',
      { callback_url: 'https://example.com/h', webhook_id: 'a\u0000b' },
      '/webhook_id',
    ],
    [
      'a lone surrogate in webhook_id',
      '/api/webhooks/calls',
      { callback_url: 'https://example.com/h', webhook_id: '\ud83d' },
      '/webhook_id',
    ],
    [
      'NUL in callback_url',
      '/api/webhooks',
      { callback_url: 'https://example.com/h\u0000' },
      '/callback_url',
    ],
  ])('%s', async (_, url, body, pointer) => {
    const before = await footprint();
    const response = await api.app.inject({
      method: 'POST',
      url,
      headers: json(api.token('hostile')),
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const pointers = (response.json().errors as Array<{ pointer: string }>).map((e) => e.pointer);
    expect(pointers.some((p) => p.startsWith(pointer))).toBe(true);
    expect(await footprint()).toEqual(before);
  });

  it('accepts data nested exactly 32 levels', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: json(api.token('deep')),
      payload: nestedEvent(32),
    });
    expect(response.statusCode).toBe(202);
  });

  it.each([
    'page=1e300',
    'page=1000001',
    'page=0',
    'page_size=101',
    'page=abc',
    'status=%00',
    'status=active&status=%00',
  ])('refuses the query %s with 400', async (query) => {
    const response = await api.app.inject({
      method: 'GET',
      url: `/api/webhooks?${query}`,
      headers: json(api.token('paging')),
    });
    expect(response.statusCode).toBe(400);
  });

  it.each([
    ['/api/webhooks', 'page=502&page_size=20', /status or type/],
    ['/api/webhooks', 'page=1000000', /status or type/],
    [
      '/api/webhooks/01900000-0000-7000-8000-000000000000/deliveries',
      'page=102&page_size=100',
      /before set to the id/,
    ],
  ])(
    'refuses %s?%s, a page past the first 10,000 rows, with 400 saying how to narrow',
    async (path, query, how) => {
      const response = await api.app.inject({
        method: 'GET',
        url: `${path}?${query}`,
        headers: json(api.token('paging')),
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors).toEqual([{ pointer: '/page', detail: expect.stringMatching(how) }]);
    },
  );

  it('serves the deepest page allowed (row 10,000), empty when there are fewer rows', async () => {
    const response = await api.app.inject({
      method: 'GET',
      url: '/api/webhooks?page=501&page_size=20',
      headers: json(api.token('paging')),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().results).toEqual([]);
  });

  it('lists at most 20 field errors, so a body of many wrong fields gets a small answer', async () => {
    const fields = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`unknown_${i}`, i]));
    const body = JSON.stringify({ callback_url: 'https://example.com/h', ...fields });
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: json(api.token('amplifier')),
      payload: body,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toHaveLength(20);
    expect(response.json().detail).toMatch(/and 19980 more errors not listed$/);
    expect(response.body.length).toBeLessThan(body.length / 10);
  });

  it('refuses event data with more than 1,000 top-level fields, naming /data', async () => {
    const data = Object.fromEntries(Array.from({ length: 1_001 }, (_, i) => [`f${i}`, i]));
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: json(api.token('wide')),
      payload: { type: 'call.completed', data },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([{ pointer: '/data', detail: expect.stringMatching(/1000/) }]);
  });
});
