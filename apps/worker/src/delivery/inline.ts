/**
 * The inline first attempt, as Svix's worker sends first attempts: the process that admitted a first
 * delivery attempts it through `deliver.ts`, and only what did not end gets a job. The fan-out waits
 * at most DELIVERY_INLINE_DEADLINE_MS; a slower attempt finishes in the background, never sent twice.
 * One that dies with its worker is found again by the scheduler's lease or the reconciler.
 */
import type { Logger } from 'pino';
import { context, ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { deliveryJob, traceMetadata } from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';
import type { DeliveryStep, RoundRef } from './step.js';
import type { LoadedDelivery } from './store.js';

/** A delivery job as `Queue.addBulk` takes it. */
export type DeliveryJobSpec = ReturnType<typeof deliveryJob>;

/** A first delivery to attempt inline: its job id and what its job would carry. */
export interface InlineCandidate {
  jobId: string;
  eventId: string;
  subscriptionId: string;
  /** The subscription's account (`DeliveryJobData.accountId`). */
  accountId: string;
  requestId?: string;
  /** Its job's priority for a backlogged account's delivery: its job and follow-up stay in the back lane. */
  priority?: number;
  /** The delivery as its fan-out just created it: the attempt skips the load (`RoundRef.loaded`). */
  loaded?: LoadedDelivery;
  /** Its event's fan-out trace context, which its span and follow-up join (never another event's trace). */
  traceContext?: Context;
}

/** The job `candidate` gets when it is not attempted inline: its first round's, in its lane. */
export function candidateJob(candidate: InlineCandidate, maxAttempts: number): DeliveryJobSpec {
  const job = deliveryJob({ ...candidate, round: 0 }, maxAttempts);
  const metadata = candidate.traceContext === undefined ? undefined : traceMetadata(candidate.traceContext);
  return {
    ...job,
    opts: {
      ...job.opts,
      ...(candidate.priority === undefined ? {} : { priority: candidate.priority }),
      ...(metadata === undefined ? {} : { telemetry: { metadata } }),
    },
  };
}

/** What follows an inline attempt: the job that must exist now, or null when the round ended. */
export interface FollowUp {
  jobId: string;
  job: DeliveryJobSpec | null;
}

/** The answers of {@link InlineAttempts.attempt}. */
export interface InlineRun {
  /** Settled within the deadline (or not attempted at all: their job as before). */
  settled: FollowUp[];
  /** Still running at the deadline; each resolves, never rejects, when its attempt ends. */
  late: Array<Promise<FollowUp>>;
}

export interface InlineAttempts {
  /** Attempts `candidates`, waiting for them at most the deadline. Never throws. */
  attempt(candidates: readonly InlineCandidate[]): Promise<InlineRun>;
  /** Starts `candidates` without waiting: those not attempted here are `settled` with their job, others `late`. */
  start(candidates: readonly InlineCandidate[]): InlineRun;
  /** Waits for `start`'s attempts at most the deadline: ended ones `settled`, others `late`. Never throws. */
  wait(late: ReadonlyArray<Promise<FollowUp>>): Promise<InlineRun>;
  /** Attempts this process could start now: its `maxInFlight` less those in flight. */
  room(): number;
  /** The most attempts in flight at once in this process (`maxInFlight`). */
  readonly capacity: number;
}

export interface InlineAttemptsOptions {
  /** The attempt path of a subscription's deliveries, or null when this process does not deliver for its shard. */
  deliverFor(subscriptionId: string): ((ref: RoundRef) => Promise<DeliveryStep>) | null;
  /** DELIVERY_MAX_ATTEMPTS: a round's attempts, the inline one included. */
  maxAttempts: number;
  /** DELIVERY_INLINE_DEADLINE_MS. */
  deadlineMs: number;
  /** Inline attempts in flight in this process at most (WORKER_CONCURRENCY). */
  maxInFlight: number;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'inlineAttempts'>;
}

/**
 * The job after a step of an inline first round, or null. A retry's job carries `inlineAttempts` and
 * one BullMQ attempt less, so BullMQ's limit ends the round at `maxAttempts`.
 */
export function followUpJob(
  candidate: InlineCandidate,
  step: DeliveryStep,
  maxAttempts: number,
  now: number,
): DeliveryJobSpec | null {
  if (step.kind === 'ended') return null;
  const job = candidateJob(candidate, maxAttempts);
  if (step.kind === 'wait') return { ...job, opts: { ...job.opts, delay: step.waitMs } };
  const { outcome } = step;
  if (outcome.kind !== 'retry') return null;
  return {
    ...job,
    data: { ...job.data, inlineAttempts: 1 },
    opts: {
      ...job.opts,
      attempts: maxAttempts - 1,
      delay: Math.max(0, outcome.nextAttemptAt.getTime() - now),
    },
  };
}

/** Creates the inline attempts of a worker process that runs both the fan-out and deliveries. */
export function createInlineAttempts(options: InlineAttemptsOptions): InlineAttempts {
  const { maxAttempts, log } = options;
  let inFlight = 0;

  const queued = (candidate: InlineCandidate): FollowUp => ({
    jobId: candidate.jobId,
    job: candidateJob(candidate, maxAttempts),
  });

  const run = async (
    candidate: InlineCandidate,
    deliver: (ref: RoundRef) => Promise<DeliveryStep>,
  ): Promise<FollowUp> => {
    inFlight += 1;
    try {
      const { traceContext, ...ref } = candidate;
      const step = await context.with(traceContext ?? ROOT_CONTEXT, () =>
        deliver({ ...ref, round: 0, enqueuedAt: Date.now(), maxAttempts }),
      );
      options.metrics.inlineAttempts.inc({ result: step.kind === 'wait' ? 'waiting' : 'sent' });
      return { jobId: candidate.jobId, job: followUpJob(candidate, step, maxAttempts, Date.now()) };
    } catch (error) {
      // A fault around the attempt, not the callback's: its job tries again, no attempt used.
      log.debug({ err: error, jobId: candidate.jobId }, 'inline attempt not made; the delivery job will');
      options.metrics.inlineAttempts.inc({ result: 'skipped' });
      return queued(candidate);
    } finally {
      inFlight -= 1;
    }
  };

  /** Starts each candidate's attempt, or settles it with its job when it cannot run here. */
  const start = (candidates: readonly InlineCandidate[]): InlineRun => {
    const settled: FollowUp[] = [];
    const late: Array<Promise<FollowUp>> = [];
    for (const candidate of candidates) {
      const deliver = options.deliverFor(candidate.subscriptionId);
      if (deliver === null || inFlight >= options.maxInFlight) {
        options.metrics.inlineAttempts.inc({ result: 'skipped' });
        settled.push(queued(candidate));
      } else late.push(run(candidate, deliver));
    }
    return { settled, late };
  };

  const wait = async (late: ReadonlyArray<Promise<FollowUp>>): Promise<InlineRun> => {
    if (late.length === 0) return { settled: [], late: [] };
    // Registered before the race below, so each entry knows it ended by the time the race does.
    const entries = late.map((promise) => {
      const entry: { promise: Promise<FollowUp>; ended?: FollowUp } = { promise };
      void promise.then((ended) => {
        entry.ended = ended;
      });
      return entry;
    });
    // A plain timer, cleared: an aborted timers/promises sleep builds two stack-carrying errors per event.
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(late),
      new Promise<void>((resolve) => {
        deadline = setTimeout(resolve, options.deadlineMs);
      }),
    ]);
    clearTimeout(deadline);
    const waited: InlineRun = { settled: [], late: [] };
    for (const entry of entries) {
      if (entry.ended !== undefined) waited.settled.push(entry.ended);
      else waited.late.push(entry.promise);
    }
    return waited;
  };

  return {
    capacity: options.maxInFlight,
    room: () => Math.max(0, options.maxInFlight - inFlight),
    start,
    wait,
    async attempt(candidates) {
      const begun = start(candidates);
      const ran = await wait(begun.late);
      return { settled: [...begun.settled, ...ran.settled], late: ran.late };
    },
  };
}
