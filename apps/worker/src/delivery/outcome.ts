/**
 * What an attempt means for its delivery (docs/api.md#retries-and-limits): a result without an
 * error class confirms it (exactly HTTP 200, or a broker's confirmation); any other fails it, retried
 * after {@link retryDelayMs} while attempts remain; an address the SSRF guard refused is given up at once.
 */
import type { AttemptResult } from './attempt.js';
import { retryDelayMs, type DeliveryPolicy } from './backoff.js';

/** What becomes of a delivery after one attempt. */
export type DeliveryOutcome =
  | { kind: 'succeeded' }
  | { kind: 'retry'; nextAttemptAt: Date }
  | { kind: 'given_up'; reason: 'attempts_exhausted' | 'blocked_address' };

/**
 * Decides the outcome of an attempt.
 * @param attemptsBefore this round's earlier attempts, from the delivery row (a re-created job continues)
 * @param policy the round's attempts and backoff
 */
export function decideOutcome(
  result: AttemptResult,
  attemptsBefore: number,
  policy: DeliveryPolicy,
  now = new Date(),
): DeliveryOutcome {
  if (result.errorClass === null) return { kind: 'succeeded' };
  if (result.errorClass === 'blocked_address') return { kind: 'given_up', reason: 'blocked_address' };
  const failedAttempts = attemptsBefore + 1;
  if (failedAttempts >= policy.maxAttempts) return { kind: 'given_up', reason: 'attempts_exhausted' };
  const waitMs = retryDelayMs(policy.backoffMs, failedAttempts, result.retryAfterMs);
  return { kind: 'retry', nextAttemptAt: new Date(now.getTime() + waitMs) };
}

/**
 * Whether an attempt counts for its subscription's circuit breaker: not a transformation that failed
 * (nothing was sent), nor a destination's throttle (the service asks the sender to slow down; the
 * in-flight cap and backoff answer it, as for a 429, and the receiver is not failing).
 */
export function countsForBreaker(result: Pick<AttemptResult, 'errorClass'>): boolean {
  return result.errorClass !== 'transformation_failed' && result.errorClass !== 'broker_throttled';
}
