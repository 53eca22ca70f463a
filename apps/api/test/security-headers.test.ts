import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let api: TestApi;
let proxied: TestApi;
beforeAll(async () => {
  api = await startTestApi('headers');
  proxied = await startTestApi('headers-proxied', {
    TRUST_PROXY: '1',
    PORTAL_FRAME_ANCESTORS: "'self' https://dashboard.example.com",
  });
});
afterAll(async () => {
  await api.close();
  await proxied.close();
});

describe('security headers', () => {
  it('send every JSON answer with nosniff, no framing and a policy that loads nothing', async () => {
    for (const response of [
      await api.app.inject({ url: '/api/webhooks', headers: api.auth('acme') }),
      await api.app.inject({ url: '/api/webhooks' }),
      await api.app.inject({ url: '/healthz' }),
    ]) {
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-frame-options']).toBe('DENY');
      expect(response.headers['content-security-policy']).toMatch(
        /default-src 'none'.*frame-ancestors 'none'/,
      );
    }
  });

  it('send HSTS only on answers the client got over TLS, as the trusted proxy says', async () => {
    const plain = await api.app.inject({ url: '/healthz', headers: { 'x-forwarded-proto': 'https' } });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    const overTls = await proxied.app.inject({ url: '/healthz', headers: { 'x-forwarded-proto': 'https' } });
    expect(overTls.headers['strict-transport-security']).toMatch(/^max-age=31536000/);
    const overHttp = await proxied.app.inject({ url: '/healthz', headers: { 'x-forwarded-proto': 'http' } });
    expect(overHttp.headers['strict-transport-security']).toBeUndefined();
  });

  it('give Swagger UI a policy of its own that still allows its scripts', async () => {
    const docs = await api.app.inject({ url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    const policy = String(docs.headers['content-security-policy']);
    expect(policy).toMatch(/script-src 'self'/);
    expect(policy).not.toMatch(/upgrade-insecure-requests/);
  });

  it('let the portal be embedded only by PORTAL_FRAME_ANCESTORS', async () => {
    const own = await api.app.inject({ url: '/portal/' });
    expect(own.statusCode).toBe(200);
    expect(own.headers['content-security-policy']).toMatch(/frame-ancestors 'self'$/);
    expect(own.headers['x-frame-options']).toBeUndefined();
    const embedded = await proxied.app.inject({ url: '/portal/' });
    expect(embedded.headers['content-security-policy']).toMatch(
      /frame-ancestors 'self' https:\/\/dashboard\.example\.com$/,
    );
  });
});
