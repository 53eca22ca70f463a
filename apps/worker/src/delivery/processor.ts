/**
 * The processor of the `deliveries` queue: one job, one attempt. It re-reads the delivery with its
 * event and subscription (deleted subscription: the job is dropped; disabled: the delivery is
 * cancelled), sends the attempt, records it, and lets BullMQ retry by throwing while attempts remain.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import type { DeliveryJobData, DeliveryPolicy } from '@webhooks/shared';
import type { AttemptSender } from './attempt.js';
import { decideOutcome } from './outcome.js';
import { buildAttemptRequest } from './request.js';
import type { DeliveryStore } from './store.js';

/** What a delivery job came to (the BullMQ return value of a completed job). */
export type DeliveryJobResult = 'succeeded' | 'dropped' | 'cancelled' | 'not_pending';

/** A failed attempt with attempts left, or the last one: BullMQ records the message. */
export class DeliveryAttemptError extends Error {
  override name = 'DeliveryAttemptError';
}

/** What the processor needs. */
export interface DeliveryProcessorDeps {
  store: DeliveryStore;
  sender: AttemptSender;
  /** Used when a job carries no attempts/backoff of its own. */
  policy: DeliveryPolicy;
}

/** The round's policy as BullMQ will apply it: the job's own options win over the configuration. */
function jobPolicy(job: Job, fallback: DeliveryPolicy): DeliveryPolicy {
  const backoff = job.opts.backoff;
  const backoffMs =
    typeof backoff === 'object' && backoff.delay !== undefined ? backoff.delay : fallback.backoffMs;
  return { maxAttempts: job.opts.attempts ?? fallback.maxAttempts, backoffMs };
}

/**
 * Creates the processor.
 *
 * @throws DeliveryAttemptError when the attempt failed (BullMQ retries it while attempts remain)
 * @throws UnrecoverableError when the callback's address is refused: no retry can help
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  return async (job: Job<DeliveryJobData>): Promise<DeliveryJobResult> => {
    const { eventId, subscriptionId } = job.data;
    const delivery = await deps.store.load({ eventId, subscriptionId });
    if (delivery === null) return 'dropped';
    if (delivery.status !== 'pending') return 'not_pending';
    const { event, subscription } = delivery;
    if (subscription.status === 'disabled') {
      await deps.store.cancel(delivery.id);
      return 'cancelled';
    }

    const { body, headers } = buildAttemptRequest(event, subscription, new Date());
    const result = await deps.sender.send(subscription.callbackUrl, body, headers);
    const outcome = decideOutcome(result, job.attemptsMade, jobPolicy(job, deps.policy));
    await deps.store.record({ delivery, result, outcome });

    if (outcome.kind === 'succeeded') return 'succeeded';
    const what = `${result.errorClass}: ${result.errorMessage ?? ''}`;
    if (outcome.kind === 'given_up' && outcome.reason === 'blocked_address')
      throw new UnrecoverableError(what);
    throw new DeliveryAttemptError(what);
  };
}
