/**
 * The one place that decides what an attempt means for its delivery
 * (docs/api.md#retries-and-limits):
 * - exactly HTTP 200 confirms the delivery; to a broker destination, the broker's confirmation
 *   (publisher confirms on RabbitMQ, JetStream's acknowledgement on NATS): both are a result
 *   without an error class;
 * - any other answer, a timeout, a refused or reset connection fails the attempt, and it is retried
 *   after the wait of {@link retryDelayMs} while attempts remain; after the last one it is given up;
 * - a callback address refused by the SSRF guard is given up at once: retrying cannot help.
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
 *
 * @param attemptsBefore attempts this round made before this one (counted from the delivery row's attempts, not from BullMQ's `job.attemptsMade`, so a re-created job continues the round)
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
