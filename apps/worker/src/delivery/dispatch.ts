/**
 * What becomes of a first delivery the account scheduler admitted: the fan-out attempts its own
 * front-lane admissions inline (`inline.ts`); other new rows are attempted in the background within the
 * attempts' room (`admission-room.ts`); the rest get their job. An entry is confirmed once its attempt
 * ended, so a process dying mid-attempt leaves it leased, to be admitted again.
 */
import { context, ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { backLanePriority, batcher, type DeliveryJobData } from '@webhooks/shared';
import { lanes } from '../scheduling/admission-script.js';
import { backgroundRoom, worthAdmitting } from '../scheduling/admission-room.js';
import type { AdmissionDispatcher, ScheduledDelivery, SchedulerHooks } from '../scheduling/dispatcher.js';
import {
  candidateJob,
  type FollowUp,
  type InlineAttempts,
  type InlineCandidate,
  type InlineRun,
} from './inline.js';
import type { LoadedDelivery } from './store.js';
import { createWake } from './wake.js';

/** A first delivery as the fan-out schedules it, with what its inline attempt may use. */
export interface FanOutDelivery extends ScheduledDelivery {
  /**
   * The delivery as its fan-out created it, opened only for an inline attempt (which skips the load).
   * @throws the secret box's error when no configured key opens its signing secret
   */
  loaded?: () => LoadedDelivery;
  /** The trace context of its event's fan-out job (`InlineCandidate.traceContext`). */
  traceContext?: Context;
}

/** A first delivery as an inline candidate, from its job id; `backLane`: its job keeps the back lane's priority. */
export function candidateOfJob(
  jobId: string,
  accountId: string,
  requestId: string | undefined,
  backLane: boolean,
): InlineCandidate {
  const [eventId, subscriptionId] = jobId.split('.') as [string, string];
  return {
    jobId,
    eventId,
    subscriptionId,
    accountId,
    ...(requestId === undefined || requestId === '' ? {} : { requestId }),
    ...(backLane ? { priority: backLanePriority } : {}),
  };
}

/** `candidate` with its fan-out's delivery when its secret opens (else the attempt loads it) and trace context. */
function withLoaded(candidate: InlineCandidate, delivery: FanOutDelivery): InlineCandidate {
  const traced =
    delivery.traceContext === undefined ? candidate : { ...candidate, traceContext: delivery.traceContext };
  if (delivery.loaded === undefined) return traced;
  try {
    return { ...traced, loaded: delivery.loaded() };
  } catch {
    return traced;
  }
}

export interface DispatchOptions {
  /** The shard's `deliveries` queue. */
  deliveries: Queue<DeliveryJobData>;
  /** DELIVERY_MAX_ATTEMPTS, for the jobs it adds. */
  maxAttempts: number;
  /** DELIVERY_QUEUE_TARGET: an admission's limit when nothing is attempted in the background. */
  queueTarget: number;
  log: Logger;
}

/** A shard's dispatcher, and how a process that attempts deliveries hands it its attempts. */
export interface Dispatch extends AdmissionDispatcher<FanOutDelivery> {
  /** Attempts with `attempts` the fan-out's own admissions, and with `background` other new rows of this shard. */
  attemptWith(attempts: InlineAttempts, options: { background: boolean }): void;
}

/** Creates the dispatcher of one shard's scheduler. */
export function createDispatch(options: DispatchOptions): Dispatch {
  const { deliveries, maxAttempts, log } = options;
  let own: InlineAttempts | undefined;
  let background: InlineAttempts | undefined;
  let hooks: SchedulerHooks = { confirm: async () => {}, slotsFreed: () => {} };
  /** Inline attempts that outlived their fan-out's deadline, until their follow-up is done. */
  const late = new Set<Promise<void>>();

  /** Adds `ended`'s jobs (admissions, follow-ups), then with `confirm` releases their entries: one `addBulk`, one script. */
  const settle = async (ended: readonly FollowUp[], confirm: boolean) => {
    const jobs = ended.flatMap(({ job }) => (job === null ? [] : [job]));
    // Outside the caller's context: a job admitted later from Redis must not join some fan-out's trace.
    if (jobs.length > 0) await context.with(ROOT_CONTEXT, () => deliveries.addBulk(jobs));
    if (confirm) await hooks.confirm(ended.map(({ jobId }) => jobId));
  };
  /** {@link settle} for attempts that end one by one: those ending together are settled together. */
  const settleBatch = (confirm: boolean) =>
    batcher<FollowUp, void>(async (ended) => {
      await settle(ended, confirm);
      return ended.map(() => undefined);
    });
  const settleLate = { confirmed: settleBatch(true), unconfirmed: settleBatch(false) };

  /**
   * As each late inline attempt ends: adds its follow-up job, then with `confirm` releases its entry.
   * One that fails stays leased (or pending in PostgreSQL) and is found again; logged, never thrown.
   */
  const followLate = (pending: ReadonlyArray<Promise<FollowUp>>, confirm: boolean) => {
    for (const attempt of pending) {
      const done: Promise<void> = attempt
        .then(async (ended) => {
          await (confirm ? settleLate.confirmed : settleLate.unconfirmed)(ended);
          hooks.slotsFreed();
        })
        .catch((error: unknown) =>
          log.warn({ err: error }, 'follow-up of a late inline attempt not stored; it is found again later'),
        )
        .finally(() => late.delete(done));
      late.add(done);
    }
  };

  /** Slots promised to admissions under way: overlapping admissions would otherwise count the same free slots. */
  let promised = 0;
  /** The free inline slots no admission under way has promised yet. */
  const unpromisedRoom = (attempts: InlineAttempts) => Math.max(0, attempts.room() - promised);
  const none: InlineRun = { settled: [], late: [] };

  const wake = createWake({ queueOf: () => deliveries, log });
  /** Wakes held jobs granted their turn, then confirms them; one not woken takes its turn when its park ends. */
  const wakeHeld = async (jobIds: readonly string[]) => {
    await wake(jobIds);
    await hooks.confirm(jobIds);
  };

  return {
    attemptWith(attempts, { background: inBackground }) {
      own = attempts;
      background = inBackground ? attempts : undefined;
    },
    reserve() {
      if (background === undefined) return { limit: options.queueTarget, release: () => {} };
      const limit = backgroundRoom(unpromisedRoom(background), background.capacity);
      promised += limit;
      return { limit, release: () => void (promised -= limit) };
    },
    worthAdmitting: () =>
      background === undefined || worthAdmitting(unpromisedRoom(background), background.capacity),
    connect(schedulerHooks) {
      hooks = schedulerHooks;
    },
    async dispatch(admitted) {
      const held = admitted.filter((delivery) => delivery.held);
      if (held.length > 0) await wakeHeld(held.map(({ jobId }) => jobId));
      const ended: FollowUp[] = [];
      const mineToAttempt: InlineCandidate[] = [];
      const others: InlineCandidate[] = [];
      for (const delivery of admitted) {
        if (delivery.held) continue;
        // The stale lane is the back lane too.
        const candidate = candidateOfJob(
          delivery.jobId,
          delivery.accountId,
          delivery.requestId,
          delivery.lane !== lanes.front,
        );
        if (delivery.own !== undefined && own !== undefined)
          mineToAttempt.push(withLoaded(candidate, delivery.own));
        else if (background !== undefined && delivery.lane !== lanes.stale && delivery.created)
          others.push(candidate);
        else ended.push({ jobId: delivery.jobId, job: candidateJob(candidate, maxAttempts) });
      }
      // Started first, so that they run while the caller's own attempts are waited for.
      const aside = others.length === 0 ? none : background!.start(others);
      // Followed before anything can throw: an attempt under way is settled when it ends, and close() waits.
      followLate(aside.late, true);
      const mine = mineToAttempt.length === 0 ? none : own!.start(mineToAttempt);
      const waiting = mine.late.length === 0 ? Promise.resolve(none) : own!.wait(mine.late);
      let ran = none;
      try {
        // The rest get their jobs now, not after the caller's attempts, or a quiet account waits behind them.
        await settle([...ended, ...aside.settled, ...mine.settled], true);
      } finally {
        ran = await waiting;
        followLate(ran.late, true);
      }
      await settle(ran.settled, true);
      // The caller's attempts that ended within the deadline freed slots too.
      if (ran.settled.length > 0) hooks.slotsFreed();
    },
    async close() {
      await Promise.all([...late]);
    },
  };
}
