/**
 * "Infrastructure down is 503, never 500, and never a hang": the API on a PostgreSQL
 * server of the test's own, which the test stops and starts again, and on a Redis address where
 * nothing listens (so the first connection never succeeds). The machine's shared servers are
 * never touched.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { migrate, migrationsDir } from '@webhooks/db';
import {
  createEventPublisher,
  exampleCatalogueFile,
  loadCatalogue,
  PublishUnavailableError,
} from '@webhooks/shared';
import { buildApp, createTokenMinter, loadApiConfig } from '../src/index.js';
import { isInfrastructureError } from '../src/lib/infrastructure-error.js';
import { startPrivateRedis, type PrivateRedis } from '../../../scripts/lib/private-redis.js';
import { freePort } from '../../../scripts/lib/services.js';
import { startTestApi, testEnv, testJwtSecret, type TestApi } from '../../../test/support/api.js';
import { startPrivatePostgres, type PrivatePostgres } from '../../../test/support/private-postgres.js';
import { dropPrefix, newQueuePrefix } from '../../../test/support/redis.js';

describe('PostgreSQL unreachable', () => {
  let server: PrivatePostgres;
  let app: FastifyInstance;
  let token: string;
  const prefix = newQueuePrefix('pg-down');

  beforeAll(async () => {
    server = await startPrivatePostgres();
    const databaseUrl = server.urlOf('webhooks');
    await migrate({ databaseUrl, migrationsDir });
    app = await buildApp(loadApiConfig(testEnv(databaseUrl, prefix)));
    token = createTokenMinter({ secret: testJwtSecret })('acme');
  }, 60_000);
  afterAll(async () => {
    await app.close();
    await server.destroy();
    await dropPrefix(prefix);
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload }),
      headers: { authorization: `Bearer ${token}` },
    });

  it('answers 503 with Retry-After on every route that needs it, then 2xx again once it is back', async () => {
    const created = await call('POST', '/api/webhooks', { callback_url: 'https://example.com/h' });
    expect(created.statusCode).toBe(201);
    const { id } = created.json();

    await server.stop();
    const requests: Array<[method: 'GET' | 'POST', url: string, payload?: object]> = [
      ['GET', '/api/webhooks'],
      ['GET', `/api/webhooks/${id}`],
      ['GET', `/api/webhooks/${id}/secret`],
      ['POST', `/api/webhooks/${id}/secret/rotate`],
      ['GET', `/api/webhooks/${id}/deliveries`],
      ['POST', '/api/webhooks', { callback_url: 'https://example.com/h2' }],
    ];
    for (const [method, url, payload] of requests) {
      const response = await call(method, url, payload);
      expect({ url, status: response.statusCode }).toEqual({ url, status: 503 });
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    const ready = await app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toEqual({ postgresql: 'unreachable', redis: 'ok' });

    await server.start();
    expect((await call('GET', `/api/webhooks/${id}`)).statusCode).toBe(200);
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({
      status: 'ready',
      checks: { postgresql: 'ok', redis: 'ok' },
    });
  }, 60_000);
});

describe('Redis unreachable from the start', () => {
  let api: TestApi;
  let deadRedisUrl: string;

  beforeAll(async () => {
    deadRedisUrl = `redis://127.0.0.1:${await freePort()}`;
    api = await startTestApi('redis-down', { REDIS_URL: deadRedisUrl });
  });
  afterAll(() => api.close());

  it('answers POST /api/events with 503 and Retry-After, and accepts nothing', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: api.auth('acme'),
      payload: { type: 'call.completed', data: {} },
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    expect(response.json().detail).toMatch(/nothing was accepted/);
  });

  it('still answers reads that need no Redis: the rate limit lets them pass uncounted', async () => {
    const response = await api.app.inject({ url: '/api/event-types', headers: api.auth('acme') });
    expect(response.statusCode).toBe(200);
  });

  it('refuses writes it cannot count with 503 and Retry-After, changing nothing', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('uncounted'),
      payload: { callback_url: 'https://a.example/hooks' },
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    expect(await api.app.prisma.subscription.count({ where: { accountId: 'uncounted' } })).toBe(0);
  });

  it('reports Redis unreachable and PostgreSQL ok on /readyz', async () => {
    const ready = await api.app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toEqual({ postgresql: 'ok', redis: 'unreachable' });
  });

  it('answers a manual retry and a recovery with 503, and leaves the failed delivery as it was', async () => {
    const prisma = api.app.prisma;
    const subscription = await prisma.subscription.create({
      data: { id: uuidv7(), accountId: 'acme', callbackUrl: 'https://example.com/h', secret: 'unused' },
    });
    const event = await prisma.event.create({
      data: { id: uuidv7(), accountId: 'acme', type: 'call.completed', data: {}, occurredAt: new Date() },
    });
    const delivery = await prisma.delivery.create({
      data: {
        id: uuidv7(),
        eventId: event.id,
        subscriptionId: subscription.id,
        status: 'failed',
        attemptsMade: 5,
      },
    });
    const before = await prisma.delivery.findUniqueOrThrow({ where: { id: delivery.id } });
    const retry = await api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${subscription.id}/deliveries/${delivery.id}/retry`,
      headers: api.auth('acme'),
    });
    const recover = await api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${subscription.id}/recover`,
      headers: api.auth('acme'),
      payload: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    for (const response of [retry, recover]) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
    }
    expect(await prisma.delivery.findUniqueOrThrow({ where: { id: delivery.id } })).toEqual(before);
  });

  it('makes the shared publisher throw PublishUnavailableError instead of waiting for ever', async () => {
    const publisher = createEventPublisher({
      redis: deadRedisUrl,
      prefix: 'never',
      timeoutMs: 500,
      catalogue: loadCatalogue(exampleCatalogueFile),
    });
    try {
      await expect(
        publisher.publish({ accountId: 'a', type: 'call.completed', data: {} }),
      ).rejects.toBeInstanceOf(PublishUnavailableError);
    } finally {
      await publisher.close();
    }
  });
});

describe('Redis connected but not answering', () => {
  let redis: PrivateRedis;
  let api: TestApi;

  beforeAll(async () => {
    redis = await startPrivateRedis('everysec');
    api = await startTestApi('redis-paused', { REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await api.close();
    await redis.destroy();
  });

  it('refuses a write the rate limit could not count with 503, answers reads, and a read needing Redis with 503 in time', async () => {
    const counted = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('paused'),
      payload: { callback_url: 'https://a.example/first' },
    });
    expect(counted.statusCode).toBe(201);
    redis.pause();
    try {
      const write = await api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: api.auth('paused'),
        payload: { callback_url: 'https://a.example/hooks' },
      });
      expect(write.statusCode).toBe(503);
      expect(write.headers['retry-after']).toMatch(/^\d+$/);
      const read = await api.app.inject({ url: '/api/event-types', headers: api.auth('paused') });
      expect(read.statusCode).toBe(200);
      // A read that needs Redis (the subscriptions' pacing) answers 503 within its bound, not never.
      const listed = await api.app.inject({ url: '/api/webhooks', headers: api.auth('paused') });
      expect(listed.statusCode).toBe(503);
      expect(listed.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      redis.resume();
    }
    expect(await api.app.prisma.subscription.count({ where: { accountId: 'paused' } })).toBe(1);
  });
});

describe('a query past DATABASE_STATEMENT_TIMEOUT_MS', () => {
  it('is cancelled by PostgreSQL, and counts as a dependency fault (503 with Retry-After)', async () => {
    const api = await startTestApi('statement-timeout', { DATABASE_STATEMENT_TIMEOUT_MS: '100' });
    try {
      const error = await api.app.prisma.$queryRaw`SELECT pg_sleep(2)`.then(
        () => null,
        (failure: unknown) => failure,
      );
      expect(JSON.stringify(error)).toMatch(/57014|statement timeout/);
      expect(isInfrastructureError(error)).toBe(true);
    } finally {
      await api.close();
    }
  });
});
