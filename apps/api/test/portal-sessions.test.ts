import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('portal');
});
afterAll(() => api.close());

const mint = (headers: Record<string, string>, payload?: object) =>
  api.app.inject({ method: 'POST', url: '/api/portal-sessions', headers, ...(payload ? { payload } : {}) });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const tokenOf = (url: string) => new URL(url, 'http://x').hash.replace('#token=', '');

describe('POST /api/portal-sessions', () => {
  it('mints a one-hour link whose token acts for the account only', async () => {
    await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('acme'),
      payload: { callback_url: 'https://acme.example/hooks' },
    });
    await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('globex'),
      payload: { callback_url: 'https://globex.example/hooks' },
    });
    const before = Date.now();
    const response = await mint(api.auth('acme'));
    expect(response.statusCode).toBe(200);
    const { url, expires_at } = response.json();
    expect(url).toMatch(/^\/portal\/#token=[\w-]+\.[\w-]+\.[\w-]+$/);
    const lifetime = Date.parse(expires_at) - before;
    expect(lifetime).toBeGreaterThan(3_590_000);
    expect(lifetime).toBeLessThanOrEqual(3_601_000);

    const listed = await api.app.inject({
      method: 'GET',
      url: '/api/webhooks',
      headers: bearer(tokenOf(url)),
    });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().results.map((s: { callback_url: string }) => s.callback_url)).toEqual([
      'https://acme.example/hooks',
    ]);
  });

  it('takes a lifetime within bounds, naming the field otherwise', async () => {
    const short = await mint(api.auth('acme'), { ttl_seconds: 120 });
    expect(Date.parse(short.json().expires_at) - Date.now()).toBeLessThanOrEqual(121_000);
    const bad = await mint(api.auth('acme'), { ttl_seconds: 10 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([expect.objectContaining({ pointer: '/ttl_seconds' })]);
  });

  it('refuses portal tokens on minting sessions and on publishing events, with 403', async () => {
    const token = tokenOf((await mint(api.auth('acme'))).json().url);
    const again = await mint(bearer(token));
    expect(again.statusCode).toBe(403);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    const published = await api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: bearer(token),
      payload: { type: 'call.started', data: {} },
    });
    expect(published.statusCode).toBe(403);
    expect(await api.app.prisma.event.count()).toBe(0);
  });

  it('refuses an expired portal token, and one signed with the client key, with 401', async () => {
    const expired = api.portalToken('acme', -120);
    const response = await api.app.inject({ method: 'GET', url: '/api/webhooks', headers: bearer(expired) });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toBe('The token has expired');

    const forged = api.token('acme', { scope: 'portal' });
    const refused = await api.app.inject({ method: 'GET', url: '/api/webhooks', headers: bearer(forged) });
    expect(refused.statusCode).toBe(401);
  });
});
