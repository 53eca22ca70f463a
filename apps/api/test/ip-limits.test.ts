import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { buildApp } from '../src/index.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('ip-limits', {
    OPEN_REQUESTS_PER_MINUTE_PER_IP: '5',
    AUTH_FAILURES_PER_MINUTE_PER_IP: '3',
  });
});
afterAll(() => api.close());

const from = (remoteAddress: string, url: string, headers: Record<string, string> = {}) =>
  api.app.inject({ url, headers, remoteAddress });

describe('limits per client address', () => {
  it('answers 429 with Retry-After past OPEN_REQUESTS_PER_MINUTE_PER_IP on the open routes, per address', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await from('198.51.100.1', '/healthz')).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    const refused = await from('198.51.100.1', '/readyz');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('198.51.100.2', '/healthz')).statusCode).toBe(200);
  });

  it('does not count account routes against the open limit', async () => {
    const statuses = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await from('198.51.100.3', '/api/webhooks', api.auth('acme'))).statusCode);
    expect(statuses).toEqual(Array(7).fill(200));
  });

  it('refuses every account route to an address past AUTH_FAILURES_PER_MINUTE_PER_IP, a valid token included', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push(
        (await from('198.51.100.4', '/api/webhooks', { authorization: 'Bearer guessed' })).statusCode,
      );
    expect(statuses).toEqual([401, 401, 401]);
    const locked = await from('198.51.100.4', '/api/webhooks', api.auth('acme'));
    expect(locked.statusCode).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('198.51.100.5', '/api/webhooks', api.auth('acme'))).statusCode).toBe(200);
  });

  it('refuses an address that another API instance locked out', async () => {
    const other = await buildApp(api.config);
    try {
      const guessed = { authorization: 'Bearer guessed' };
      for (let i = 0; i < 3; i++)
        await other.inject({ url: '/api/webhooks', headers: guessed, remoteAddress: '198.51.100.6' });
      expect((await from('198.51.100.6', '/api/webhooks', api.auth('acme'))).statusCode).toBe(429);
    } finally {
      await other.close();
    }
  });
});
