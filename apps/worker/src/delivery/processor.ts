/**
 * The `deliveries` queue's processor: one job, one step of its round (`deliver.ts`), mapped to
 * BullMQ. A wait moves the job to the delayed set, unspent; a failed attempt with attempts left
 * throws, and BullMQ retries after the outcome's wait; a given-up one fails for good. A PostgreSQL
 * or Redis fault defers the job (`deferral.ts`), attempts untouched; an ended FIFO head hands over.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { DeliveryJobData } from '@webhooks/shared';
import { deferJob } from '../deferral.js';
import { retryDelayMs, type DeliveryPolicy } from './backoff.js';
import { handsOverNext, type DeliveryStep, type EndedWithoutAttempt, type RoundRef } from './step.js';

/** What a delivery job came to (the BullMQ return value of a completed job). */
export type DeliveryJobResult = 'succeeded' | EndedWithoutAttempt;

/** A failed attempt with attempts left: BullMQ records the message and waits `delayMs`. */
export class DeliveryAttemptError extends Error {
  override name = 'DeliveryAttemptError';
  /** @param delayMs wait before the next attempt, in ms, as `decideOutcome` computed it */
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/**
 * The deliveries worker's `settings.backoffStrategy`: the wait in ms `decideOutcome` computed (the log's
 * `next_attempt_at`), or {@link retryDelayMs} for a failure carrying none.
 */
export function deliveryBackoffStrategy(policy: DeliveryPolicy) {
  return (attemptsMade: number, _type?: string, error?: Error): number =>
    error instanceof DeliveryAttemptError
      ? error.delayMs
      : retryDelayMs(policy.backoffMs, attemptsMade, null);
}

/**
 * Whether a job's run was not admitted by the account scheduler: a new round, or a retry (after a
 * failed BullMQ attempt or the inline one). A first round back from a wait keeps its admission.
 */
export function needsTurn(run: { round: number; inlineAttempts: number; attemptsMade: number }): boolean {
  return run.round > 0 || run.inlineAttempts > 0 || run.attemptsMade > 0;
}

/** The round a job runs: its BullMQ attempts plus `inlineAttempts`, so BullMQ's limit and the outcome agree. */
export function roundOfJob(job: Job<DeliveryJobData>, defaultAttempts: number): RoundRef {
  const { eventId, subscriptionId, accountId, requestId, inlineAttempts } = job.data;
  return {
    jobId: job.id!,
    eventId,
    subscriptionId,
    accountId,
    round: job.data.round ?? 0,
    ...(requestId === undefined ? {} : { requestId }),
    enqueuedAt: job.timestamp,
    maxAttempts: (job.opts.attempts ?? defaultAttempts) + (inlineAttempts ?? 0),
    needsTurn: needsTurn({
      round: job.data.round ?? 0,
      inlineAttempts: inlineAttempts ?? 0,
      attemptsMade: job.attemptsMade,
    }),
  };
}

export interface DeliveryProcessorDeps {
  /** One step of a round (`createDeliver`). */
  deliver: (ref: RoundRef) => Promise<DeliveryStep>;
  /** Hands a FIFO subscription's next heads over once the job's head ended (`in-order.ts`); never throws. */
  handOver: (subscriptionId: string) => Promise<void>;
  /** Attempts of a job that carries none of its own. */
  policy: Pick<DeliveryPolicy, 'maxAttempts'>;
  log: Logger;
}

/**
 * Creates the processor.
 * @throws DeliveryAttemptError when the attempt failed with attempts left (BullMQ retries it)
 * @throws UnrecoverableError when the delivery was given up (attempts exhausted, address refused)
 * @throws DelayedError when the job waits (gate, rate limit, host) or PostgreSQL or Redis failed
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  const run = async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryJobResult> => {
    const ref = roundOfJob(job, deps.policy.maxAttempts);
    const step = await deps.deliver(ref);
    if (handsOverNext(step)) await deps.handOver(ref.subscriptionId);
    if (step.kind === 'ended') return step.result;
    if (step.kind === 'wait') {
      await job.moveToDelayed(Date.now() + step.waitMs, token);
      throw new DelayedError();
    }
    const { outcome, failure } = step;
    if (outcome.kind === 'succeeded') return 'succeeded';
    if (outcome.kind === 'given_up') throw new UnrecoverableError(failure);
    throw new DeliveryAttemptError(failure, Math.max(0, outcome.nextAttemptAt.getTime() - Date.now()));
  };

  return async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryJobResult> => {
    try {
      return await run(job, token);
    } catch (error) {
      if (
        error instanceof DelayedError ||
        error instanceof DeliveryAttemptError ||
        error instanceof UnrecoverableError
      )
        throw error;
      // Anything else failed around the attempt (PostgreSQL, Redis, a secret no key opens): not the callback's.
      deps.log.warn(
        { err: error, jobId: job.id, eventId: job.data.eventId, requestId: job.data.requestId },
        'delivery deferred: a dependency failed',
      );
      return deferJob(job, token);
    }
  };
}
