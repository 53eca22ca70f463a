/**
 * When a failed delivery is tried again (docs/api.md#retries-and-limits; a 429's or 503's
 * `Retry-After` honoured): BullMQ's backoff strategy and the log's `next_attempt_at` both use it.
 */

/** Retry policy of deliveries. */
export interface DeliveryPolicy {
  /** Attempts in all, the first included (DELIVERY_MAX_ATTEMPTS). */
  maxAttempts: number;
  /** Wait after the first failure, in ms (DELIVERY_BACKOFF_MS); doubles after each further one. */
  backoffMs: number;
}

/** Longest wait a callback's `Retry-After` can impose, in ms (1 hour). */
export const maxRetryAfterMs = 3_600_000;

/**
 * Ms before the next attempt after `failedAttempts` (≥ 1): `backoffMs * 2^(failedAttempts - 1)`, or
 * `retryAfterMs` (null: none) when longer, at most 1 hour (never below the exponential wait).
 */
export function retryDelayMs(backoffMs: number, failedAttempts: number, retryAfterMs: number | null): number {
  const exponential = backoffMs * 2 ** (failedAttempts - 1);
  if (retryAfterMs === null) return exponential;
  return Math.max(exponential, Math.min(retryAfterMs, maxRetryAfterMs));
}

/** A `Retry-After` (RFC 9110 §10.2.3, seconds or HTTP-date) in ms (0 for a past date); null when missing or neither. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date always names its weekday or month in letters; a bare number is not one.
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now.getTime());
}
