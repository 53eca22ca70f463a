/**
 * Authenticating to a receiver beside the signature: HTTP Basic (RFC 7617) or an OAuth 2.0 client
 * credentials token (RFC 6749 §4.4), as Convoy and Svix offer. Sealed, bound to its subscription; shown masked.
 */
import { maskedHeaderValue } from './custom-headers.js';
import type { ReceiverAuthInput, ReceiverAuthView } from './schemas/receiver-auth.js';
import type { SecretBox } from './secret-box.js';

/** A subscription's receiver authentication, as the worker uses it. */
export type ReceiverAuth =
  | { type: 'basic'; username: string; password: string }
  | {
      type: 'oauth2_client_credentials';
      tokenUrl: string;
      clientId: string;
      clientSecret: string;
      scope: string | null;
      audience: string | null;
    };

/** The stored form of an API `auth` field. */
export function receiverAuthFromInput(input: ReceiverAuthInput): ReceiverAuth {
  if (input.type === 'basic') return { type: 'basic', username: input.username, password: input.password };
  return {
    type: 'oauth2_client_credentials',
    tokenUrl: input.token_url,
    clientId: input.client_id,
    clientSecret: input.client_secret,
    scope: input.scope ?? null,
    audience: input.audience ?? null,
  };
}

/** `auth` sealed for subscription `subscriptionId`; null for none. */
export function sealReceiverAuth(
  auth: ReceiverAuth | null,
  subscriptionId: string,
  box: SecretBox,
): string | null {
  return auth === null ? null : box.seal(JSON.stringify(auth), subscriptionId);
}

/** The receiver authentication sealed as `sealed` for `subscriptionId`, or null. @throws the secret box's error */
export function openReceiverAuth(
  sealed: string | null,
  subscriptionId: string,
  box: Pick<SecretBox, 'open'>,
): ReceiverAuth | null {
  return sealed === null ? null : (JSON.parse(box.open(sealed, subscriptionId)) as ReceiverAuth);
}

/** How the API shows `auth`: every field but the password or client secret, masked. */
export function maskedReceiverAuth(auth: ReceiverAuth | null): ReceiverAuthView | null {
  if (auth === null) return null;
  if (auth.type === 'basic') return { type: 'basic', username: auth.username, password: maskedHeaderValue };
  return {
    type: 'oauth2_client_credentials',
    token_url: auth.tokenUrl,
    client_id: auth.clientId,
    client_secret: maskedHeaderValue,
    scope: auth.scope,
    audience: auth.audience,
  };
}

/** The `Authorization` header of HTTP Basic authentication (RFC 7617 section 2), UTF-8. */
export function basicAuthorization(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** Where an OAuth 2.0 token URL may point, beside the callback policy. */
export interface TokenUrlRules {
  /** Outside development and test: `client_secret` never travels in clear, so `https:` only. */
  httpsOnly: boolean;
  /**
   * CALLBACK_VERIFICATION=challenge: only the callback's verified origin, or a host of
   * OAUTH_TOKEN_HOSTS, gets the credentials, as a transformation may only send to that origin.
   */
  verifiedOrigin: boolean;
  /** OAUTH_TOKEN_HOSTS: host names (`login.example.com`) or suffixes (`*.auth0.com`), lower case. */
  allowedHosts: readonly string[];
}

/**
 * Why `tokenUrl` may not receive `auth`'s client credentials for the callback at `callbackUrl`
 * (null: it may). Over http, RFC 6749 §2.3.1 credentials travel in clear; under verification the
 * worker would post them to a URL no receiver proved it owns.
 */
export function tokenUrlRefusal(tokenUrl: string, callbackUrl: string, rules: TokenUrlRules): string | null {
  const token = new URL(tokenUrl);
  if (rules.httpsOnly && token.protocol !== 'https:')
    return 'must be https: the client secret would travel in clear';
  if (!rules.verifiedOrigin || !/^https?:/i.test(callbackUrl)) return null;
  if (token.origin === new URL(callbackUrl).origin) return null;
  const host = token.hostname.toLowerCase();
  const listed = rules.allowedHosts.some((allowed) =>
    allowed.startsWith('*.') ? host.endsWith(allowed.slice(1)) : host === allowed,
  );
  return listed
    ? null
    : `must share the callback's verified origin ${new URL(callbackUrl).origin}, or be on a host of OAUTH_TOKEN_HOSTS (CALLBACK_VERIFICATION=challenge)`;
}
