/**
 * The REST client: openapi-fetch over the types generated from the API's OpenAPI document
 * (schema.ts), so every path, parameter, body and answer is typed and none is written by hand.
 */
import createClient, { type Client } from 'openapi-fetch';
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
}

/**
 * A client of the API at `baseUrl` authenticated with `token`.
 *
 * Each call resolves to `{ data, error, response }`: `data` is the typed answer on 2xx, `error` the
 * {@link Problem} on 4xx and 5xx (read `error.errors` for the invalid fields, and `Retry-After` on
 * 429 and 503), `response` the raw `Response`. It rejects only when the API cannot be reached.
 *
 * @example
 * const api = createWebhookClient({ baseUrl: 'http://127.0.0.1:3000', token });
 * const { data, error } = await api.POST('/api/webhooks', { body: { callback_url: 'https://app.example/hooks' } });
 */
export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.token}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
