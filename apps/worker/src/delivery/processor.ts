/**
 * The processor of the `deliveries` queue: one job, one attempt. It gives up a round older than
 * DELIVERY_MAX_AGE as `expired`, takes an in-flight slot of the subscription's gate (over the
 * limit, the job waits in BullMQ's delayed set without using an attempt), re-reads the delivery
 * with its event and subscription (deleted subscription: the job is dropped; disabled: the
 * delivery is cancelled), passes the subscription's `rate_limit` and its callback host's cap
 * (`host-gate.ts`), sends the attempt, gives the slots back, records the attempt, and lets BullMQ
 * retry by throwing while attempts remain. A FIFO subscription's delivery waits until it is its
 * subscription's head, and its end gives the next one its job (`fifo.ts`).
 *
 * Only a sent request is an attempt: when PostgreSQL or Redis fails anywhere around it,
 * the job is deferred (`deferral.ts`) and tried again later, its attempts untouched. The round's
 * attempts are counted from the delivery row, not from the job, so a job the reconciler
 * re-created continues the round where it was.
 */
import { performance } from 'node:perf_hooks';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { SpanKind } from '@opentelemetry/api';
import { attemptsBeforeRound, congestionSignal, inSpan, type DeliveryJobData } from '@webhooks/shared';
import { deferJob } from '../deferral.js';
import { attemptStatusClass, type WorkerMetrics } from '../metrics.js';
import type { AttemptResult, AttemptSender } from './attempt.js';
import { retryDelayMs, type DeliveryPolicy } from './backoff.js';
import { eventAcceptedAt, isExpired, roundStartedAt } from './expiry.js';
import type { FifoHeads } from './fifo.js';
import type { DeliveryGate } from './gate.js';
import type { HostGate } from './host-gate.js';
import { decideOutcome, type DeliveryOutcome } from './outcome.js';
import { buildAttemptRequest } from './request.js';
import type { DeliveryStore, LoadedDelivery } from './store.js';

/** What a delivery job came to (the BullMQ return value of a completed job). */
export type DeliveryJobResult = 'succeeded' | 'dropped' | 'cancelled' | 'not_pending' | 'expired';

/** A failed attempt with attempts left: BullMQ records the message and waits `delayMs`. */
export class DeliveryAttemptError extends Error {
  override name = 'DeliveryAttemptError';
  /** @param delayMs wait before the next attempt, in ms, as {@link decideOutcome} computed it */
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/**
 * The deliveries worker's `settings.backoffStrategy`: the wait {@link decideOutcome} computed
 * (the same that gave the delivery log its `next_attempt_at`), or {@link retryDelayMs} for a
 * failure that carries none.
 *
 * @returns the wait in ms before the next attempt, after `attemptsMade` failed ones
 */
export function deliveryBackoffStrategy(policy: DeliveryPolicy) {
  return (attemptsMade: number, _type?: string, error?: Error): number =>
    error instanceof DeliveryAttemptError
      ? error.delayMs
      : retryDelayMs(policy.backoffMs, attemptsMade, null);
}

/** What the processor needs. */
export interface DeliveryProcessorDeps {
  store: DeliveryStore;
  sender: AttemptSender;
  gate: DeliveryGate;
  hostGate: HostGate;
  /** Backoff, and attempts when a job carries none of its own. */
  policy: DeliveryPolicy;
  /** DELIVERY_MAX_AGE, in ms. */
  maxAgeMs: number;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'deliveries' | 'attemptDuration' | 'attemptInFlightLimit' | 'deliveryLatency'>;
  /** Ordered delivery (fifo.ts): the heads' jobs, and the watch on earlier events' fan-outs. */
  fifo: { heads: FifoHeads; earlierFanOut: (accountId: string, eventId: string) => Promise<boolean> };
}

/**
 * How long a job of a new round waits for the API to mark its row (the API enqueues first), in
 * ms; past it, the API gave the round up and the job is dropped.
 */
const roundStartGraceMs = 60_000;

/**
 * How long a delivery to a subscription still `pending` (its callback not yet verified) waits
 * before it looks again, in ms. Waiting uses no attempt; DELIVERY_MAX_AGE still applies.
 */
const unverifiedCallbackWaitMs = 10_000;

/**
 * How long a FIFO subscription's delivery that is not its head waits before it looks again, in
 * ms; the head's end wakes it sooner (`FifoHeads.ensure`). Waiting uses no attempt.
 */
const fifoTurnWaitMs = 1_000;

/** How long a FIFO head waits for an earlier event's fan-out to store its deliveries, in ms. */
const fifoFanOutWaitMs = 50;

/** What happened while the job held its slot. */
type WithinSlot =
  | { kind: 'done'; result: Exclude<DeliveryJobResult, 'succeeded'>; fifo: boolean }
  | { kind: 'wait'; waitMs: number }
  | { kind: 'sent'; delivery: LoadedDelivery; result: AttemptResult };

/**
 * Creates the processor.
 *
 * @throws DeliveryAttemptError when the attempt failed with attempts left (BullMQ retries it)
 * @throws UnrecoverableError when the delivery was given up (attempts exhausted, address refused)
 * @throws DelayedError when the job waits: its gate, its rate limit, or a PostgreSQL or Redis fault
 */
export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  const park = async (job: Job, token: string | undefined, waitMs: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + waitMs, token);
    throw new DelayedError();
  };

  const withinSlot = async (job: Job<DeliveryJobData>, round: number): Promise<WithinSlot> => {
    const delivery = await deps.store.load(job.data);
    if (delivery === null) return { kind: 'done', result: 'dropped', fifo: false };
    const fifo = delivery.subscription.ordering === 'fifo';
    if (delivery.round > round) return { kind: 'done', result: 'not_pending', fifo };
    if (delivery.round < round) {
      // The API enqueues a round before it marks the row; give it time, then take it as rolled back.
      return Date.now() - job.timestamp < roundStartGraceMs
        ? { kind: 'wait', waitMs: 1_000 }
        : { kind: 'done', result: 'not_pending', fifo };
    }
    if (delivery.status !== 'pending') return { kind: 'done', result: 'not_pending', fifo };
    const { event, subscription } = delivery;
    if (subscription.status === 'disabled') {
      await deps.store.cancel(delivery.id);
      return { kind: 'done', result: 'cancelled', fifo };
    }
    // A callback moved to a URL not yet verified: its deliveries wait for the challenge's answer.
    if (subscription.status === 'pending') return { kind: 'wait', waitMs: unverifiedCallbackWaitMs };
    if (fifo) {
      if (!delivery.isHead) return { kind: 'wait', waitMs: fifoTurnWaitMs };
      if (await deps.fifo.earlierFanOut(subscription.accountId, event.id)) {
        return { kind: 'wait', waitMs: fifoFanOutWaitMs };
      }
      // The head again, after the watch: an earlier event fanned out between the load above and
      // the watch was seen by neither.
      const again = await deps.store.load(job.data);
      if (again?.isHead !== true) return { kind: 'wait', waitMs: fifoTurnWaitMs };
    }
    // The host's slot first: an attempt the cap holds back must not count in the rate window.
    const { hostname } = new URL(subscription.callbackUrl);
    const hostWaitMs = await deps.hostGate.acquire(hostname, job.id!);
    if (hostWaitMs > 0) return { kind: 'wait', waitMs: hostWaitMs };
    try {
      if (subscription.rateLimit !== null) {
        const waitMs = await deps.gate.pace(subscription.id, job.id!, subscription.rateLimit);
        if (waitMs > 0) return { kind: 'wait', waitMs };
      }
      const { body, headers } = buildAttemptRequest(event, subscription, new Date());
      // A span per attempt, retries included, in the trace the job carries (the event's).
      const result = await inSpan(
        'webhooks-worker',
        'webhook attempt',
        {
          'webhook.delivery_id': delivery.id,
          'webhook.event_id': event.id,
          'webhook.subscription_id': subscription.id,
          'webhook.attempt': delivery.attemptsMade + 1,
          'server.address': hostname,
        },
        async (annotate) => {
          const sent = await deps.sender.send(subscription.callbackUrl, body, headers);
          annotate({ 'http.response.status_code': sent.statusCode, 'webhook.error': sent.errorClass });
          return sent;
        },
        SpanKind.CLIENT,
      );
      return { kind: 'sent', delivery, result };
    } finally {
      await deps.hostGate.release(hostname, job.id!);
    }
  };

  /**
   * A FIFO subscription's delivery has ended: its next one gets its job. A fault here is logged,
   * not thrown (the delivery is recorded already); the reconciler gives the head its job then.
   */
  const nextInOrder = async (subscriptionId: string) => {
    try {
      await deps.fifo.heads.ensure([subscriptionId]);
    } catch (error) {
      deps.log.warn({ err: error, subscriptionId }, 'next ordered delivery not queued; the reconciler will');
    }
  };

  const run = async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryJobResult> => {
    const { eventId, subscriptionId } = job.data;
    const round = job.data.round ?? 0;
    if (isExpired(roundStartedAt(eventId, round, job.timestamp), Date.now(), deps.maxAgeMs)) {
      await deps.store.expire({ eventId, subscriptionId, round });
      deps.log.warn(
        { eventId, subscriptionId, requestId: job.data.requestId, reason: 'expired' },
        'delivery given up',
      );
      // Rare enough to look, whatever the subscription's ordering: only a FIFO one has a next head.
      await nextInOrder(subscriptionId);
      return 'expired';
    }
    const admission = await deps.gate.acquire(subscriptionId, job.id!);
    if (!admission.admitted) return park(job, token, admission.waitMs);
    const admittedAt = performance.now();
    let step: WithinSlot | undefined;
    try {
      step = await withinSlot(job, round);
    } finally {
      const attempt = step?.kind === 'sent' ? { signal: congestionSignal(step.result) } : null;
      await deps.gate.release(subscriptionId, job.id!, admission, attempt, performance.now() - admittedAt);
    }
    if (step.kind === 'done') {
      if (step.fifo) await nextInOrder(subscriptionId);
      return step.result;
    }
    if (step.kind === 'wait') return park(job, token, step.waitMs);

    const { delivery, result } = step;
    const maxAttempts = job.opts.attempts ?? deps.policy.maxAttempts;
    const outcome = decideOutcome(result, delivery.attemptsMade - attemptsBeforeRound(round), {
      maxAttempts,
      backoffMs: deps.policy.backoffMs,
    });
    await deps.store.record({ delivery, result, outcome, inFlightLimit: admission.inFlightLimit });
    observe(job, delivery, result, outcome);
    deps.metrics.attemptInFlightLimit.observe(admission.inFlightLimit);
    if (outcome.kind !== 'retry' && delivery.subscription.ordering === 'fifo')
      await nextInOrder(subscriptionId);

    if (outcome.kind === 'succeeded') return 'succeeded';
    // BullMQ's failed reason is the operator's (queue dashboard), so it keeps the library's detail.
    const what = `${result.errorClass}: ${result.errorDetail ?? result.errorMessage ?? ''}`;
    if (outcome.kind === 'given_up') throw new UnrecoverableError(what);
    throw new DeliveryAttemptError(what, Math.max(0, outcome.nextAttemptAt.getTime() - Date.now()));
  };

  /** The recorded attempt's metrics and log line: `info` when confirmed, `warn` when given up. */
  const observe = (
    job: Job<DeliveryJobData>,
    delivery: LoadedDelivery,
    result: AttemptResult,
    outcome: DeliveryOutcome,
  ) => {
    deps.metrics.attemptDuration.observe(
      { status_class: attemptStatusClass(result) },
      result.durationMs / 1000,
    );
    deps.metrics.deliveries.inc({ outcome: outcome.kind });
    const line = {
      deliveryId: delivery.id,
      eventId: delivery.event.id,
      subscriptionId: delivery.subscription.id,
      requestId: job.data.requestId,
      attempt: delivery.attemptsMade + 1,
      status: result.statusCode,
      durationMs: result.durationMs,
    };
    if (outcome.kind === 'succeeded') {
      deps.metrics.deliveryLatency.observe((Date.now() - eventAcceptedAt(delivery.event.id)) / 1000);
      deps.log.info(line, 'delivery succeeded');
    } else if (outcome.kind === 'given_up') {
      deps.log.warn(
        { ...line, error: result.errorClass, detail: result.errorDetail, reason: outcome.reason },
        'delivery given up',
      );
    } else {
      deps.log.debug(
        {
          ...line,
          error: result.errorClass,
          detail: result.errorDetail,
          nextAttemptAt: outcome.nextAttemptAt,
        },
        'delivery attempt failed',
      );
    }
  };

  return async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryJobResult> => {
    try {
      const result = await run(job, token);
      if (result === 'cancelled' || result === 'dropped') deps.metrics.deliveries.inc({ outcome: result });
      if (result === 'expired') deps.metrics.deliveries.inc({ outcome: 'given_up' });
      return result;
    } catch (error) {
      if (
        error instanceof DelayedError ||
        error instanceof DeliveryAttemptError ||
        error instanceof UnrecoverableError
      )
        throw error;
      // Anything else failed around the attempt, not the callback: PostgreSQL, Redis, a stored
      // secret no key opens. None of it is the callback's attempt to lose.
      deps.log.warn(
        { err: error, jobId: job.id, eventId: job.data.eventId, requestId: job.data.requestId },
        'delivery deferred: a dependency failed',
      );
      return deferJob(job, token);
    }
  };
}
