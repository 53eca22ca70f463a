import { describe, expect, it } from '@jest/globals';
import { basicAuthorization, maskedReceiverAuth, receiverAuthFromInput } from '@webhooks/shared';
import { defaultTokenLifeMs, tokenRefreshAt } from '../src/delivery/receiver-authorization.js';

describe('receiver authentication rules', () => {
  it('encodes HTTP Basic credentials as RFC 7617 does', () => {
    expect(basicAuthorization('Aladdin', 'open sesame')).toBe('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
  });

  it('asks for a token again 30 s before it expires, or a tenth of its life before when shorter', () => {
    expect(tokenRefreshAt(0, 3600)).toBe(3_570_000);
    expect(tokenRefreshAt(0, 60)).toBe(54_000);
    expect(tokenRefreshAt(1000, undefined)).toBe(1000 + defaultTokenLifeMs - 30_000);
  });

  it('shows every field but the secret, and stores what was sent', () => {
    const stored = receiverAuthFromInput({
      type: 'oauth2_client_credentials',
      token_url: 'https://idp.example/token',
      client_id: 'c',
      client_secret: 's',
    });
    expect(stored).toEqual({
      type: 'oauth2_client_credentials',
      tokenUrl: 'https://idp.example/token',
      clientId: 'c',
      clientSecret: 's',
      scope: null,
      audience: null,
    });
    expect(maskedReceiverAuth(stored)).toEqual({
      type: 'oauth2_client_credentials',
      token_url: 'https://idp.example/token',
      client_id: 'c',
      client_secret: '********',
      scope: null,
      audience: null,
    });
    expect(maskedReceiverAuth({ type: 'basic', username: 'u', password: 'p' })).toEqual({
      type: 'basic',
      username: 'u',
      password: '********',
    });
  });
});
