/**
 * The one rule for when a failed delivery is tried again (docs/api.md#retries-and-limits; a 429's
 * or 503's `Retry-After` is honoured). BullMQ applies it through the worker's custom backoff strategy,
 * and the delivery log's `next_attempt_at` is computed with it, so the two cannot disagree.
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
 * Milliseconds to wait before the next attempt, after `failedAttempts` (≥ 1) failed attempts:
 * `backoffMs * 2^(failedAttempts - 1)`, or the callback's `Retry-After` when that is longer,
 * clamped to at most 1 hour (but never below the exponential wait).
 *
 * @param retryAfterMs what the last answer's `Retry-After` asked for, in ms; null when none
 */
export function retryDelayMs(backoffMs: number, failedAttempts: number, retryAfterMs: number | null): number {
  const exponential = backoffMs * 2 ** (failedAttempts - 1);
  if (retryAfterMs === null) return exponential;
  return Math.max(exponential, Math.min(retryAfterMs, maxRetryAfterMs));
}

/**
 * Reads a `Retry-After` header (RFC 9110 section 10.2.3): delay-seconds, or an HTTP-date.
 *
 * @returns the wait it asks for in ms (0 for a date in the past), or null when the header is
 *   missing or neither form
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date always names its weekday or month in letters; a bare number is not one.
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now.getTime());
}
