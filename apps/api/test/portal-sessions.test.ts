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
const linkOf = (url: string) => new URL(url, 'http://x').hash.replace('#link=', '');
const exchange = (link: string) =>
  api.app.inject({ method: 'POST', url: '/api/portal-sessions/exchange', payload: { link } });
/** The session token of a freshly minted link of `account`. */
const sessionOf = async (account: string, payload?: object) =>
  (await exchange(linkOf((await mint(api.auth(account), payload)).json().url))).json().token as string;

describe('POST /api/portal-sessions', () => {
  it('mints a one-time link whose one-hour session acts for the account only', async () => {
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
    expect(url).toMatch(/^\/portal\/#link=plk_[\w-]{43}$/);
    expect(Date.parse(expires_at) - before).toBeLessThanOrEqual(301_000);

    const session = await exchange(linkOf(url));
    expect(session.statusCode).toBe(200);
    expect(session.headers['cache-control']).toBe('no-store');
    const lifetime = Date.parse(session.json().expires_at) - before;
    expect(lifetime).toBeGreaterThan(3_590_000);
    expect(lifetime).toBeLessThanOrEqual(3_601_000);
    const again = await exchange(linkOf(url));
    expect(again.statusCode).toBe(401);
    expect(again.json().detail).toMatch(/used already/);

    const listed = await api.app.inject({
      method: 'GET',
      url: '/api/webhooks',
      headers: bearer(session.json().token),
    });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().results.map((s: { callback_url: string }) => s.callback_url)).toEqual([
      'https://acme.example/hooks',
    ]);
  });

  it('takes a lifetime within bounds, naming the field otherwise', async () => {
    const short = await mint(api.auth('acme'), { ttl_seconds: 120 });
    const session = (await exchange(linkOf(short.json().url))).json();
    expect(Date.parse(session.expires_at) - Date.now()).toBeLessThanOrEqual(121_000);
    const bad = await mint(api.auth('acme'), { ttl_seconds: 10 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([expect.objectContaining({ pointer: '/ttl_seconds' })]);
  });

  it('refuses portal tokens on minting sessions and on publishing events, with 403', async () => {
    const token = await sessionOf('acme');
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

  it('revokes a session, before or after its link is opened, for its own account only', async () => {
    const opened = (await mint(api.auth('acme'))).json();
    const token = (await exchange(linkOf(opened.url))).json().token;
    const waiting = (await mint(api.auth('acme'))).json();
    const revoke = (id: string, account: string) =>
      api.app.inject({ method: 'DELETE', url: `/api/portal-sessions/${id}`, headers: api.auth(account) });

    expect((await revoke(opened.id, 'globex')).statusCode).toBe(404);
    expect((await api.app.inject({ url: '/api/webhooks', headers: bearer(token) })).statusCode).toBe(200);
    expect((await revoke(opened.id, 'acme')).statusCode).toBe(204);
    const refused = await api.app.inject({ url: '/api/webhooks', headers: bearer(token) });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().detail).toMatch(/revoked/);

    expect((await revoke(waiting.id, 'acme')).statusCode).toBe(204);
    expect((await exchange(linkOf(waiting.url))).statusCode).toBe(401);
    expect((await revoke(waiting.id, 'acme')).statusCode).toBe(204);
  });

  it('refuses a link that expired before it was opened', async () => {
    const quick = await startTestApi('portal-link-expiry', { PORTAL_LINK_SECONDS: '10' });
    try {
      const { url } = (
        await quick.app.inject({ method: 'POST', url: '/api/portal-sessions', headers: quick.auth('acme') })
      ).json();
      // Redis expires the link: aged here by its key's own expiry, not by waiting 10 s.
      const keys = await quick.app.redis.keys(`${quick.prefix}*portal:link:*`);
      expect(keys).toHaveLength(1);
      await quick.app.redis.pexpire(keys[0]!, 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const late = await quick.app.inject({
        method: 'POST',
        url: '/api/portal-sessions/exchange',
        payload: { link: linkOf(url) },
      });
      expect(late.statusCode).toBe(401);
    } finally {
      await quick.close();
    }
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
