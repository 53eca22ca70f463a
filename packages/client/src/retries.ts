/**
 * The client's retries, with ky: a 429 or 503 after its `Retry-After` (RFC 9110 §10.2.3) plus jitter;
 * a 408, 500, 502, 504 or network failure after exponential backoff with full jitter; at most `limit`
 * within `timeoutMs`. Only idempotent methods, and a `POST` with an `Idempotency-Key`.
 */
import ky, { HTTPError, type Options } from 'ky';

/** How the client retries. */
export interface RetryPolicy {
  /** Retries of one call at most (default 3; 0 sends each call once). */
  limit?: number;
  /** How long one call may take, its retries and their waits included, in ms (default 30,000). */
  timeoutMs?: number;
  /** Longest `Retry-After` the client waits, in ms; a longer one ends the call (default 10,000). */
  maxRetryAfterMs?: number;
}

/** Methods safe to send again whatever happened to the first request (RFC 9110 §9.2.2). */
const idempotentMethods = ['get', 'put', 'delete', 'head', 'options'];

/** Whether `request` may be sent again: an idempotent method, or a POST with an idempotency key. */
export function mayRetry(request: Pick<Request, 'method' | 'headers'>): boolean {
  const method = request.method.toLowerCase();
  return idempotentMethods.includes(method) || (method === 'post' && request.headers.has('idempotency-key'));
}

/**
 * The random part added to `retryAfterMs` (ms): up to half of it, at most 1 s per second asked, so
 * refused clients spread out, never early. `random` in [0, 1).
 */
export function retryAfterSpreadMs(retryAfterMs: number, random: number): number {
  return Math.round((retryAfterMs / 2) * random);
}

/** The waits a `Retry-After` header value asks for, in ms (delay-seconds or an HTTP date), or null. */
function retryAfterOf(error: Error): number | null {
  if (!(error instanceof HTTPError)) return null;
  const value = error.response.headers.get('retry-after');
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** A `fetch` retrying as {@link RetryPolicy} says (openapi-fetch's `fetch` option), answering the final response. */
export function retryingFetch(
  policy: RetryPolicy,
  fetch: (request: Request) => Promise<Response> = globalThis.fetch,
): (request: Request) => Promise<Response> {
  const options = (request: Request): Options => ({
    fetch: (input, init) => fetch(new Request(input, init)),
    timeout: policy.timeoutMs ?? 30_000,
    retry: {
      limit: mayRetry(request) ? (policy.limit ?? 3) : 0,
      methods: [request.method.toLowerCase()],
      maxRetryAfter: policy.maxRetryAfterMs ?? 10_000,
      jitter: true,
    },
    hooks: {
      beforeRetry: [
        async ({ error }) => {
          const asked = retryAfterOf(error);
          if (asked !== null)
            await new Promise((resolve) => setTimeout(resolve, retryAfterSpreadMs(asked, Math.random())));
        },
      ],
    },
  });
  return async (request) => {
    try {
      return await ky(request, options(request));
    } catch (error) {
      if (error instanceof HTTPError) return error.response;
      throw error;
    }
  };
}
