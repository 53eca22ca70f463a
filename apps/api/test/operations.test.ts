/**
 * The API's operator surfaces: Prometheus metrics behind METRICS_TOKEN, the queue
 * dashboard behind ADMIN_TOKEN (never a client's JWT), and request ids carried from the request to
 * the event's job.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { queueNames, type EventJobData } from '@webhooks/shared';
import { prometheusSample } from '../../../scripts/lib/prometheus-sample.js';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { testRedisUrl } from '../../../test/support/redis.js';

const metricsToken = 'metrics-token-for-tests';
const adminToken = 'admin-token-for-tests';
let open: TestApi;
let guarded: TestApi;
let redis: Redis;

beforeAll(async () => {
  open = await startTestApi('ops-open');
  guarded = await startTestApi('ops-guarded', { METRICS_TOKEN: metricsToken, ADMIN_TOKEN: adminToken });
  redis = new Redis(testRedisUrl);
});
afterAll(async () => {
  redis.disconnect();
  await Promise.all([open.close(), guarded.close()]);
});

describe('/metrics', () => {
  it('counts accepted events and times requests by route pattern, never by id', async () => {
    const before = (await open.app.inject({ url: '/metrics' })).body;
    const published = await open.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: open.auth('acct-metrics'),
      payload: { type: 'call.started', data: {} },
    });
    expect(published.statusCode).toBe(202);
    await open.app.inject({
      url: '/api/webhooks/0190b4a0-0000-7000-8000-000000000000',
      headers: open.auth('acct-metrics'),
    });
    const after = await open.app.inject({ url: '/metrics' });
    expect(after.statusCode).toBe(200);
    expect(after.headers['content-type']).toMatch(/^text\/plain/);
    const series = 'webhook_events_published_total{source="api"}';
    expect(prometheusSample(after.body, series) - prometheusSample(before, series)).toBe(1);
    expect(
      prometheusSample(
        after.body,
        'webhook_http_request_duration_seconds_count{method="POST",route="/api/events",status_class="2xx"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(after.body).toContain('route="/api/webhooks/:id",status_class="4xx"');
    expect(after.body).not.toContain('0190b4a0');
    expect(after.body).toContain('process_resident_memory_bytes');
  });

  it('requires METRICS_TOKEN when it is set, as bearer or Basic password, and refuses a client JWT', async () => {
    expect((await guarded.app.inject({ url: '/metrics' })).statusCode).toBe(401);
    expect((await guarded.app.inject({ url: '/metrics', headers: guarded.auth('acct') })).statusCode).toBe(
      401,
    );
    const bearer = await guarded.app.inject({
      url: '/metrics',
      headers: { authorization: `Bearer ${metricsToken}` },
    });
    expect(bearer.statusCode).toBe(200);
    const basic = Buffer.from(`prometheus:${metricsToken}`).toString('base64');
    expect(
      (await guarded.app.inject({ url: '/metrics', headers: { authorization: `Basic ${basic}` } }))
        .statusCode,
    ).toBe(200);
  });
});

describe('the queue dashboard', () => {
  it('is not there without ADMIN_TOKEN', async () => {
    expect((await open.app.inject({ url: '/admin/queues' })).statusCode).toBe(404);
  });

  it('refuses requests without ADMIN_TOKEN, a client JWT included, asking the browser for a password', async () => {
    const anonymous = await guarded.app.inject({ url: '/admin/queues' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic/);
    expect(anonymous.headers['content-type']).toMatch(/problem\+json/);
    expect(
      (await guarded.app.inject({ url: '/admin/queues', headers: guarded.auth('acct') })).statusCode,
    ).toBe(401);
    expect(
      (
        await guarded.app.inject({
          url: '/admin/queues/api/queues',
          headers: { authorization: 'Bearer wrong' },
        })
      ).statusCode,
    ).toBe(401);
  });

  it('serves the page and the queues to the token', async () => {
    const basic = Buffer.from(`ops:${adminToken}`).toString('base64');
    const page = await guarded.app.inject({
      url: '/admin/queues',
      headers: { authorization: `Basic ${basic}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('Webhook queues');
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'/);
    const queues = await guarded.app.inject({
      url: '/admin/queues/api/queues',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(queues.statusCode).toBe(200);
    expect(
      queues
        .json()
        .queues.map((queue: { name: string }) => queue.name)
        .sort(),
    ).toEqual(Object.values(queueNames).sort());
  });
});

describe('ADMIN_PORT', () => {
  it("moves /metrics and the queue dashboard to the operators' listener, off the API port", async () => {
    const split = await startTestApi('ops-split', {
      ADMIN_PORT: '9',
      METRICS_TOKEN: metricsToken,
      ADMIN_TOKEN: adminToken,
    });
    try {
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
      expect((await split.app.inject({ url: '/metrics', headers: bearer(metricsToken) })).statusCode).toBe(
        404,
      );
      expect((await split.app.inject({ url: '/admin/queues', headers: bearer(adminToken) })).statusCode).toBe(
        404,
      );
      const metrics = await split.app.operator.inject({ url: '/metrics', headers: bearer(metricsToken) });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body).toContain('webhook_http_request_duration_seconds');
      expect((await split.app.operator.inject({ url: '/metrics' })).statusCode).toBe(401);
      const page = await split.app.operator.inject({ url: '/admin/queues', headers: bearer(adminToken) });
      expect(page.statusCode).toBe(200);
      expect(
        (await split.app.operator.inject({ url: '/api/webhooks', headers: split.auth('acct') })).statusCode,
      ).toBe(404);
    } finally {
      await split.close();
    }
  });
});

describe('X-Request-Id', () => {
  const publish = (headers: Record<string, string>) =>
    open.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: { ...open.auth('acct-trace'), ...headers },
      payload: { type: 'call.started', data: {} },
    });
  const jobData = async (id: string) => {
    const queue = new Queue<EventJobData>(queueNames.events, { connection: redis, prefix: open.prefix });
    return (await queue.getJob(id))?.data;
  };

  it("is the server's own, whatever the caller sends, and travels in the event's job to the worker", async () => {
    for (const sent of [
      {} as Record<string, string>,
      { 'x-request-id': 'trace-42' },
      { 'x-request-id': 'two words\n{"forged":1}' },
    ]) {
      const response = await publish(sent);
      expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect((await jobData(response.json().id))?.requestId).toBe(response.headers['x-request-id']);
    }
  });
});
