/**
 * The `Authorization` of a subscription's `auth`: HTTP Basic (RFC 7617), or an OAuth 2.0 client
 * credentials token (RFC 6749 §4.4) via oauth4webapi through the sender's guarded fetch, cached per
 * subscription until near expiry, one request shared. A 401 gets one fresh token and one more try.
 */
import { createHash } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { basicAuthorization, type ReceiverAuth } from '@webhooks/shared';
import type { AttemptResult, AttemptSender } from './attempt.js';

/** How long before a token expires it is requested again, in ms, at most a tenth of its life. */
export const refreshMarginMs = 30_000;

/** A token's life when the server does not say (`expires_in`), in ms. */
export const defaultTokenLifeMs = 5 * 60_000;

/** Tokens kept at most; the oldest goes first. */
const maxTokens = 10_000;

/**
 * When a token got at `requestedAtMs` is renewed: {@link refreshMarginMs} (or a tenth of its life)
 * before `expiresInS` (RFC 6749 §5.1; absent: {@link defaultTokenLifeMs}).
 */
export function tokenRefreshAt(requestedAtMs: number, expiresInS: number | undefined): number {
  const lifeMs = expiresInS === undefined ? defaultTokenLifeMs : expiresInS * 1000;
  return requestedAtMs + lifeMs - Math.min(refreshMarginMs, lifeMs / 10);
}

/** The token request failed; the message names the token URL and what went wrong. */
export class ReceiverAuthError extends Error {
  override name = 'ReceiverAuthError';
}

/** Gives attempts their `Authorization` header. */
export interface ReceiverAuthorizer {
  /** Sends with `auth`'s header; an OAuth 401 retries once with a fresh token; no token: `auth_failed`, nothing sent. */
  send(
    subscriptionId: string,
    auth: ReceiverAuth | null,
    send: (authorization?: string) => Promise<AttemptResult>,
  ): Promise<AttemptResult>;
}

/** A token cache over the sender's `fetch` ({@link AttemptSender.fetch}); `now` in ms since the epoch. */
export function createReceiverAuthorizer(
  fetch: AttemptSender['fetch'],
  now: () => number = Date.now,
): ReceiverAuthorizer {
  const tokens = new Map<string, { token: string; refreshAt: number }>();
  const pending = new Map<string, Promise<string>>();

  const request = async (auth: Extract<ReceiverAuth, { type: 'oauth2_client_credentials' }>) => {
    const server: oauth.AuthorizationServer = {
      issuer: new URL(auth.tokenUrl).origin,
      token_endpoint: auth.tokenUrl,
    };
    const client: oauth.Client = { client_id: auth.clientId };
    const parameters = new URLSearchParams();
    if (auth.scope !== null) parameters.set('scope', auth.scope);
    if (auth.audience !== null) parameters.set('audience', auth.audience);
    const requestedAt = now();
    try {
      const response = await oauth.clientCredentialsGrantRequest(
        server,
        client,
        oauth.ClientSecretBasic(auth.clientSecret),
        parameters,
        {
          [oauth.customFetch]: (url, options) =>
            fetch(url, { method: options.method, headers: options.headers, body: options.body.toString() }),
          // An http token URL is as allowed as an http callback URL: the callback policy decided.
          [oauth.allowInsecureRequests]: true,
        },
      );
      const answer = await oauth.processClientCredentialsResponse(server, client, response);
      if (answer.token_type !== 'bearer')
        throw new Error(`gave a ${answer.token_type} token, not a bearer one`);
      return { token: answer.access_token, refreshAt: tokenRefreshAt(requestedAt, answer.expires_in) };
    } catch (error) {
      throw new ReceiverAuthError(`the token URL ${auth.tokenUrl} ${failure(error)}`, { cause: error });
    }
  };

  /** `key`'s token, one request for concurrent asks; a 401'd `refused` is renewed only if still kept. */
  const token = (
    key: string,
    auth: Extract<ReceiverAuth, { type: 'oauth2_client_credentials' }>,
    refused?: string,
  ) => {
    const kept = tokens.get(key);
    if (kept !== undefined && kept.token !== refused && kept.refreshAt > now())
      return Promise.resolve(kept.token);
    const waiting = pending.get(key);
    if (waiting !== undefined) return waiting;
    const started = request(auth)
      .then((got) => {
        tokens.delete(key);
        tokens.set(key, got);
        if (tokens.size > maxTokens) tokens.delete(tokens.keys().next().value!);
        return got.token;
      })
      .finally(() => pending.delete(key));
    pending.set(key, started);
    return started;
  };

  return {
    async send(subscriptionId, auth, send) {
      if (auth === null) return send();
      if (auth.type === 'basic') return send(basicAuthorization(auth.username, auth.password));
      // A changed `auth` (another client, secret, URL or scope) is another key: its token is its own.
      // Hashed, so the cache holds no secret.
      const key = createHash('sha256')
        .update(
          JSON.stringify([
            subscriptionId,
            auth.tokenUrl,
            auth.clientId,
            auth.clientSecret,
            auth.scope,
            auth.audience,
          ]),
        )
        .digest('base64url');
      const startedAt = new Date();
      try {
        const used = await token(key, auth);
        const first = await send(`Bearer ${used}`);
        if (first.statusCode !== 401) return first;
        return await send(`Bearer ${await token(key, auth, used)}`);
      } catch (error) {
        if (!(error instanceof ReceiverAuthError)) throw error;
        return authFailure(error.message, startedAt, now() - startedAt.getTime());
      }
    },
  };
}

/** What went wrong with a token request, without the addresses a network error names. */
function failure(error: unknown): string {
  if (error instanceof oauth.ResponseBodyError) return `answered ${error.status} (${error.error})`;
  if (error instanceof oauth.WWWAuthenticateChallengeError)
    return `answered ${error.status}: the client credentials were refused`;
  if (error instanceof oauth.OperationProcessingError)
    return `answered what is not a token: ${error.message}`;
  if (error instanceof Error && error.message.startsWith('gave a ')) return error.message;
  return 'could not be reached';
}

/** A failed attempt of a token that could not be had: nothing was sent. */
function authFailure(message: string, startedAt: Date, durationMs: number): AttemptResult {
  return {
    startedAt,
    durationMs,
    statusCode: null,
    errorClass: 'auth_failed',
    errorMessage: message.slice(0, 1024),
    errorDetail: null,
    responseBody: null,
    retryAfterMs: null,
  };
}
