/** The REST client: openapi-fetch over types generated from the API's OpenAPI document (schema.ts), none by hand. */
import createClient, { type Client } from 'openapi-fetch';
import { retryingFetch, type RetryPolicy } from './retries.js';
import type { components, paths } from './schema.js';

/** An RFC 9457 problem details object: the `error` of every failed call. */
export type Problem = components['schemas']['Problem'];

/** A subscription as the API returns it. */
export type Subscription = components['schemas']['Subscription'];

/** The event catalogue as `GET /api/event-types` returns it: kinds, their types and examples. */
export type EventCatalogue =
  paths['/api/event-types']['get']['responses'][200]['content']['application/json'];

/** A typed client: `GET`, `POST`, `PUT` and `DELETE` per path of the API (openapi-fetch's `Client`). */
export type WebhookClient = Client<paths>;

/** What {@link createWebhookClient} needs. */
export interface WebhookClientOptions {
  /** Where the API is, e.g. `https://hooks.example.com` (its PUBLIC_BASE_URL); a trailing slash is dropped. */
  baseUrl: string;
  /** The bearer token (a JWT whose `sub` is your account), sent on every call. */
  token: string;
  /** A fetch to use instead of `globalThis.fetch` (tests, proxies). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Retries of 429, 503 (after `Retry-After`), 408, 5xx and network failures for calls safe to send
   * twice (`retries.ts`); `false` sends each once. Default: 3 retries, 30 s a call.
   */
  retry?: RetryPolicy | false;
}

/**
 * A client of the API at `baseUrl` with `token`. Each call resolves to `{ data, error, response }`:
 * `data` on 2xx, `error` the {@link Problem} on 4xx/5xx (`error.errors` lists invalid fields). A 429
 * or 503 is retried after `Retry-After` when safe (give a publish an `Idempotency-Key`). It rejects
 * only when the API cannot be reached or the call's time ran out.
 * @example
 * const api = createWebhookClient({ baseUrl: 'http://127.0.0.1:3000', token });
 * const { data, error } = await api.POST('/api/webhooks', { body: { callback_url: 'https://app.example/hooks' } });
 */
export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.token}` },
    fetch: options.retry === false ? fetch : retryingFetch(options.retry ?? {}, fetch),
  });
}
