/**
 * The processor of the `deliveries` queue: one job, one attempt. It takes an in-flight slot of the
 * subscription's gate (over the limit, the job waits in BullMQ's delayed set without using an
 * attempt), re-reads the delivery with its event and subscription (deleted subscription: the job is
 * dropped; disabled: the delivery is cancelled), passes the subscription's `rate_limit`, sends the
 * attempt, gives the slot back, records the attempt, and lets BullMQ retry by throwing while
 * attempts remain, after the wait of `backoff.ts`.
 */
import { performance } from 'node:perf_hooks';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { congestionSignal, type DeliveryJobData } from '@webhooks/shared';
import type { AttemptResult, AttemptSender } from './attempt.js';
import { retryDelayMs, type DeliveryPolicy } from './backoff.js';
import type { DeliveryGate } from './gate.js';
import { decideOutcome } from './outcome.js';
import { buildAttemptRequest } from './request.js';
import type { DeliveryStore, LoadedDelivery } from './store.js';

/** What a delivery job came to (the BullMQ return value of a completed job). */
export type DeliveryJobResult = 'succeeded' | 'dropped' | 'cancelled' | 'not_pending';

/** A failed attempt with attempts left, or the last one: BullMQ records the message. */
export class DeliveryAttemptError extends Error {
  override name = 'DeliveryAttemptError';
  /** @param retryAfterMs what the answer's `Retry-After` asked for, in ms; null when nothing */
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

/**
 * The deliveries worker's `settings.backoffStrategy`: {@link retryDelayMs}, the same rule that
 * gave the delivery log its `next_attempt_at`.
 *
 * @returns the wait in ms before the next attempt, after `attemptsMade` failed ones
 */
export function deliveryBackoffStrategy(policy: DeliveryPolicy) {
  return (attemptsMade: number, _type?: string, error?: Error): number =>
    retryDelayMs(
      policy.backoffMs,
      attemptsMade,
      error instanceof DeliveryAttemptError ? error.retryAfterMs : null,
    );
}

/** What the processor needs. */
export interface DeliveryProcessorDeps {
  store: DeliveryStore;
  sender: AttemptSender;
  gate: DeliveryGate;
  /** Backoff, and attempts when a job carries none of its own. */
  policy: DeliveryPolicy;
}

/** The round's policy: the job's own attempts (a manual retry round's) win over the configuration. */
function jobPolicy(job: Job, fallback: DeliveryPolicy): DeliveryPolicy {
  return { maxAttempts: job.opts.attempts ?? fallback.maxAttempts, backoffMs: fallback.backoffMs };
}

/** What happened while the job held its slot. */
type WithinSlot =
  | { kind: 'done'; result: Exclude<DeliveryJobResult, 'succeeded'> }
  | { kind: 'rate_limited'; waitMs: number }
  | { kind: 'sent'; delivery: LoadedDelivery; result: AttemptResult };

/**
 * Creates the processor.
 *
 * @throws DeliveryAttemptError when the attempt failed (BullMQ retries it while attempts remain)
 * @throws DelayedError when the subscription's gate holds the job back (no attempt is used)
 * @throws UnrecoverableError when the callback's address is refused: no retry can help
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  const park = async (job: Job, token: string | undefined, waitMs: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + waitMs, token);
    throw new DelayedError();
  };

  const withinSlot = async (job: Job<DeliveryJobData>): Promise<WithinSlot> => {
    const delivery = await deps.store.load(job.data);
    if (delivery === null) return { kind: 'done', result: 'dropped' };
    if (delivery.status !== 'pending') return { kind: 'done', result: 'not_pending' };
    const { event, subscription } = delivery;
    if (subscription.status === 'disabled') {
      await deps.store.cancel(delivery.id);
      return { kind: 'done', result: 'cancelled' };
    }
    if (subscription.rateLimit !== null) {
      const waitMs = await deps.gate.pace(subscription.id, job.id!, subscription.rateLimit);
      if (waitMs > 0) return { kind: 'rate_limited', waitMs };
    }
    const { body, headers } = buildAttemptRequest(event, subscription, new Date());
    return {
      kind: 'sent',
      delivery,
      result: await deps.sender.send(subscription.callbackUrl, body, headers),
    };
  };

  return async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryJobResult> => {
    const { subscriptionId } = job.data;
    const admission = await deps.gate.acquire(subscriptionId, job.id!);
    if (!admission.admitted) return park(job, token, admission.waitMs);
    const admittedAt = performance.now();
    let step: WithinSlot | undefined;
    try {
      step = await withinSlot(job);
    } finally {
      const attempt = step?.kind === 'sent' ? { signal: congestionSignal(step.result) } : null;
      await deps.gate.release(subscriptionId, job.id!, admission, attempt, performance.now() - admittedAt);
    }
    if (step.kind === 'done') return step.result;
    if (step.kind === 'rate_limited') return park(job, token, step.waitMs);

    const { delivery, result } = step;
    const outcome = decideOutcome(result, job.attemptsMade, jobPolicy(job, deps.policy));
    await deps.store.record({ delivery, result, outcome, inFlightLimit: admission.inFlightLimit });

    if (outcome.kind === 'succeeded') return 'succeeded';
    const what = `${result.errorClass}: ${result.errorMessage ?? ''}`;
    if (outcome.kind === 'given_up' && outcome.reason === 'blocked_address')
      throw new UnrecoverableError(what);
    throw new DeliveryAttemptError(what, result.retryAfterMs);
  };
}
