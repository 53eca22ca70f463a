/**
 * Where an OAuth 2.0 token URL may send a subscription's client credentials: over https only in
 * production, and under callback verification only to the verified callback's origin or a host
 * the operator listed.
 */
import { describe, expect, it } from '@jest/globals';
import { tokenUrlRefusal } from '../src/receiver-auth.js';

const callback = 'https://hooks.client.example/in';

describe('tokenUrlRefusal', () => {
  it('refuses http in production, where the client secret would travel in clear', () => {
    const rules = { httpsOnly: true, verifiedOrigin: false, allowedHosts: [] };
    expect(tokenUrlRefusal('http://idp.example/token', callback, rules)).toMatch(/must be https/);
    expect(tokenUrlRefusal('https://idp.example/token', callback, rules)).toBeNull();
    expect(tokenUrlRefusal('http://idp.example/token', callback, { ...rules, httpsOnly: false })).toBeNull();
  });

  it("under verification, takes only the callback's origin or a listed host", () => {
    const rules = {
      httpsOnly: true,
      verifiedOrigin: true,
      allowedHosts: ['login.idp.example', '*.auth0.com'],
    };
    expect(tokenUrlRefusal('https://hooks.client.example/oauth/token', callback, rules)).toBeNull();
    expect(tokenUrlRefusal('https://login.idp.example/token', callback, rules)).toBeNull();
    expect(tokenUrlRefusal('https://tenant.eu.auth0.com/oauth/token', callback, rules)).toBeNull();
    expect(tokenUrlRefusal('https://evil.example/token', callback, rules)).toMatch(/verified origin/);
    // Another port is another origin.
    expect(tokenUrlRefusal('https://hooks.client.example:8443/token', callback, rules)).toMatch(
      /OAUTH_TOKEN_HOSTS/,
    );
    expect(tokenUrlRefusal('https://auth0.com.evil.example/token', callback, rules)).not.toBeNull();
  });
});
