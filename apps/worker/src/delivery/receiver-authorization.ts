/**
 * The `Authorization` header of a subscription's `auth`: HTTP Basic (RFC 7617), or an OAuth 2.0
 * access token of the client credentials grant (RFC 6749 section 4.4) requested with oauth4webapi
 * through the sender's guarded fetch (the token URL meets a callback's rules), kept per
 * subscription until shortly before it expires, one request shared by every attempt waiting for
 * it. A 401 from the receiver gets one fresh token and one more try within the attempt.
 */
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
 * When a token requested at `requestedAtMs` (ms since the epoch) is requested again: before it
 * expires (`expiresInS`, the server's `expires_in` in seconds, RFC 6749 section 5.1; absent:
 * {@link defaultTokenLifeMs}) by {@link refreshMarginMs}, or by a tenth of its life if shorter.
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
  /**
   * Sends an attempt with `auth`'s header through `send`; an OAuth 2.0 one answered 401 is sent
   * once more with a fresh token. A token that cannot be had fails the attempt (`auth_failed`,
   * its message naming the token URL), nothing sent.
   */
  send(
    subscriptionId: string,
    auth: ReceiverAuth | null,
    send: (authorization?: string) => Promise<AttemptResult>,
  ): Promise<AttemptResult>;
}

/**
 * A token cache over `fetch` (the sender's, {@link AttemptSender.fetch}).
 *
 * @param now the clock, in ms since the epoch (Date.now)
 */
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

  /**
   * The token of `key`, requested once however many attempts ask at the same time; `refused`, a
   * token the receiver answered 401 to, is requested again only if it is still the one kept, so a
   * burst of 401s to one token makes one request.
   */
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
      // A changed `auth` (another client, URL or scope) is another key: its token is its own.
      const key = JSON.stringify([subscriptionId, auth.tokenUrl, auth.clientId, auth.scope, auth.audience]);
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
