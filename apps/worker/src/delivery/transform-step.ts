/**
 * A subscription's transformation as a step of the attempt path: a function that throws, overruns or
 * returns a wrong shape fails the attempt (`transformation_failed`); `cancel` cancels the delivery; no
 * thread in time waits unspent. The signature covers the transformed body; a changed URL met the
 * `callback_url` rules and meets the SSRF guard when sent.
 */
import type { TransformationRunner } from '@webhooks/shared';
import type { AttemptResult } from './attempt.js';
import { attemptPayload } from './request.js';
import type { LoadedDelivery } from './store.js';

/** What the attempt does after the transformation. */
export type TransformStep =
  /** Send to `url`, with the transformed payload and headers when there is a transformation. */
  | { kind: 'send'; url: string; transformed?: { payload: unknown; headers: Record<string, string> } }
  /** The function cancelled the delivery: nothing is sent. */
  | { kind: 'cancel' }
  /** The attempt failed before anything was sent. */
  | { kind: 'failed'; result: AttemptResult }
  /** No sandbox thread was free in time: the delivery waits `waitMs`, using no attempt. */
  | { kind: 'wait'; waitMs: number };

/** The `last_error` of a delivery its transformation cancelled. */
export const cancelledByTransformation = 'cancelled_by_transformation';

/** A failed attempt of the transformation: nothing was sent, `error` is the account's to read. */
export function transformationFailure(error: string, startedAt: Date, durationMs: number): AttemptResult {
  return {
    startedAt,
    durationMs,
    statusCode: null,
    errorClass: 'transformation_failed',
    errorMessage: error.slice(0, 1024),
    errorDetail: null,
    responseBody: null,
    retryAfterMs: null,
  };
}

/** Runs `delivery`'s transformation with `runner` (null: TRANSFORMATIONS=false, so its attempts fail, saying so). */
export async function transformStep(
  runner: TransformationRunner | null,
  { event, subscription }: Pick<LoadedDelivery, 'event' | 'subscription'>,
): Promise<TransformStep> {
  if (subscription.transformation === null) return { kind: 'send', url: subscription.callbackUrl };
  const startedAt = new Date();
  const start = performance.now();
  const failed = (error: string): TransformStep => ({
    kind: 'failed',
    result: transformationFailure(error, startedAt, Math.round(performance.now() - start)),
  });
  if (runner === null)
    return failed('transformations are turned off in this deployment (TRANSFORMATIONS=false)');
  const result = await runner.run(
    subscription.transformation,
    {
      payload: attemptPayload(event, subscription),
      headers: subscription.headers,
      url: subscription.callbackUrl,
      event_type: event.type,
    },
    subscription.accountId,
  );
  if (result.kind === 'busy') return { kind: 'wait', waitMs: result.retryAfterMs };
  if (result.kind === 'cancelled') return { kind: 'cancel' };
  if (result.kind === 'failed') return failed(result.error);
  return { kind: 'send', url: result.url, transformed: { payload: result.payload, headers: result.headers } };
}
