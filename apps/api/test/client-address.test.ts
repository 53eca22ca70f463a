/**
 * Client addresses behind a proxy: the pure rules (TRUST_PROXY's forms, IPv6 counted by /64), and
 * the failed-authentication lockout through the API, which a client cannot escape by writing its
 * own X-Forwarded-For, nor by rotating the interface half of its IPv6 address.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ConfigError } from '@webhooks/shared';
import { clientAddressKey, parseTrustProxy } from '../src/lib/client-address.js';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

describe('TRUST_PROXY', () => {
  it('takes false, a hop count, or addresses and ranges, and refuses true', () => {
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    const oneHop = parseTrustProxy('1') as (address: string, hop: number) => boolean;
    expect([oneHop('10.0.0.1', 0), oneHop('203.0.113.9', 1)]).toEqual([true, false]);
    expect(parseTrustProxy('10.0.0.0/8, 192.0.2.7,2001:db8::/32')).toEqual([
      '10.0.0.0/8',
      '192.0.2.7',
      '2001:db8::/32',
    ]);
    expect(() => parseTrustProxy('true')).toThrow(/TRUST_PROXY: `true` believes the left-most/);
    expect(() => parseTrustProxy('0')).toThrow(ConfigError);
    expect(() => parseTrustProxy('10.0.0.0/99')).toThrow(/"10.0.0.0\/99" is neither/);
    expect(() => parseTrustProxy('proxy.internal')).toThrow(ConfigError);
  });
});

describe('the key an address is counted under', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['not-an-address', 'not-an-address'],
  ])('%s is counted as %s', (ip, key) => {
    expect(clientAddressKey(ip)).toBe(key);
  });
});

describe('the failed-authentication lockout behind one proxy', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('client-address', { TRUST_PROXY: '1', AUTH_FAILURES_PER_MINUTE_PER_IP: '3' });
  });
  afterAll(() => api.close());

  /** A request through the proxy at 10.0.0.1, which appends the client's address to what the client sent. */
  const viaProxy = (client: string, claimed: string | null, headers: Record<string, string> = {}) =>
    api.app.inject({
      url: '/api/webhooks',
      remoteAddress: '10.0.0.1',
      headers: { ...headers, 'x-forwarded-for': claimed === null ? client : `${claimed}, ${client}` },
    });

  it('counts the address the proxy saw, whatever the client writes before it', async () => {
    const guessed = { authorization: 'Bearer guessed' };
    for (let i = 0; i < 3; i++) await viaProxy('203.0.113.5', `198.51.100.${i}`, guessed);
    // Locked out, though each request claimed another address, valid token or not.
    expect((await viaProxy('203.0.113.5', '198.51.100.200', api.auth('acme'))).statusCode).toBe(429);
    // Nor can a client lock out the address it names: that one is untouched.
    expect((await viaProxy('198.51.100.0', null, api.auth('acme'))).statusCode).toBe(200);
  });

  it('counts an IPv6 client by its /64', async () => {
    const guessed = { authorization: 'Bearer guessed' };
    for (let i = 1; i <= 3; i++) await viaProxy(`2001:db8:7:7::${i}`, null, guessed);
    expect((await viaProxy('2001:db8:7:7::99', null, api.auth('acme'))).statusCode).toBe(429);
    expect((await viaProxy('2001:db8:7:8::1', null, api.auth('acme'))).statusCode).toBe(200);
  });
});
