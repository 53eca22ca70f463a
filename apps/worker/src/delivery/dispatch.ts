/**
 * What becomes of a first delivery the account scheduler admitted (`scheduling/dispatcher.ts`):
 * the fan-out's own, admitted into the front lane, is attempted inline by that fan-out
 * (`inline.ts`); in a process that runs the shard's attempts, any other whose row is new is
 * attempted there in the background, admissions taking no more than the attempts have room for
 * (`scheduling/admission-room.ts`); everything else gets its BullMQ job, in its lane. An entry is
 * confirmed once its attempt ended (its follow-up job added first), so a process that dies
 * mid-attempt leaves it leased and it is admitted again.
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
   * The delivery as its fan-out created it (`createdDelivery` in store.ts), opened only for an
   * inline attempt of it, which then skips the load.
   *
   * @throws the secret box's error when no configured key opens its signing secret
   */
  loaded?: () => LoadedDelivery;
  /** The trace context of its event's fan-out job (`InlineCandidate.traceContext`). */
  traceContext?: Context;
}

/**
 * A first delivery as an inline attempt's candidate, from its job id (`<event id>.<subscription
 * id>`); `backLane`: admitted for a backlogged account, so its job keeps the back lane's priority.
 */
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

/**
 * `candidate` with the delivery its fan-out created, when `delivery` has it and its secret opens
 * (otherwise the attempt loads the delivery, and reports a secret that does not open, as any
 * other), and with its event's trace context.
 */
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

/** Options of {@link createDispatch}. */
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
  /**
   * Attempts with `attempts` the fan-out's own deliveries admitted at once, and with `background`
   * (a process that runs this shard's attempts) every other delivery admitted with its row new.
   */
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

  /**
   * Adds the jobs of `ended` (admitted deliveries, and attempts' follow-ups), then with `confirm`
   * releases their entries: one `addBulk` and one script call.
   */
  const settle = async (ended: readonly FollowUp[], confirm: boolean) => {
    const jobs = ended.flatMap(({ job }) => (job === null ? [] : [job]));
    // Outside the caller's context: a job that carries no trace context of its own (one admitted
    // later, from Redis) must not join the trace of whichever event's fan-out settles it.
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
   * As each of `pending` (inline attempts past their deadline) ends: adds its follow-up job, then
   * with `confirm` releases its entry. One that fails here stays leased (or, without the
   * scheduler, pending in PostgreSQL) and is found again; it is logged, never thrown.
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

  /**
   * Slots promised to admissions whose script call is under way. A fan-out's admission and the
   * background one can overlap; each would otherwise count the same free slots, and together admit
   * more than the attempts can start, taking the slots kept for quiet accounts.
   */
  let promised = 0;
  /** The free inline slots no admission under way has promised yet. */
  const unpromisedRoom = (attempts: InlineAttempts) => Math.max(0, attempts.room() - promised);
  const none: InlineRun = { settled: [], late: [] };

  const wake = createWake({ queueOf: () => deliveries, log });
  /**
   * Wakes held jobs whose turn was granted, then confirms their entries; one that cannot be woken
   * runs when its park ends, and takes its granted turn then.
   */
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
      // Followed before anything here can throw: an attempt under way is settled when it ends, and
      // close() waits for it, whatever becomes of this call.
      followLate(aside.late, true);
      const mine = mineToAttempt.length === 0 ? none : own!.start(mineToAttempt);
      const waiting = mine.late.length === 0 ? Promise.resolve(none) : own!.wait(mine.late);
      let ran = none;
      try {
        // What is not attempted here gets its job now, not after the caller's own attempts: behind
        // a busy worker's attempts, a quiet account's delivery would otherwise wait for them.
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
