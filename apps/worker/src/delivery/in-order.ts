/**
 * Ordered delivery's hand-over: when a FIFO subscription's head ends (confirmed, given up,
 * expired, cancelled), the worker that ended it attempts the next head at once, through the same
 * attempt path (`deliver.ts`), instead of giving it a job and waiting for a worker to take it. One
 * at a time stays the contract (`fifo.ts`); a queue round trip between two events is not.
 *
 * - One worker at a time hands a subscription's heads over: it holds the subscription's hand-over
 *   lease ({@link FifoHeads.takeHandOver}), renewed as it goes, and while it is held the fan-out
 *   and the other heads' ends give no job to the head ({@link FifoHeads.ensure}). A worker that
 *   finds it held leaves the next head to the holder.
 * - Only a first round is handed over: a later round (a manual retry, a recover) gets its job, as
 *   it carries its own start.
 * - A head that does not end in its step (a failed attempt with attempts left, or a wait: its
 *   round's claim, an earlier event's fan-out, its host's cap, its rate limit) gets the job its
 *   inline attempt would have ({@link followUpJob}), and the hand-over stops.
 * - It stops too after `maxHeads` heads, so that the job that started it ends and the worker's
 *   slot is shared, and as soon as the worker is closing, so that a shutdown waits for one
 *   attempt, not for a backlog.
 * - Whenever it stops, it lets the lease go and then gives the head its job: a delivery the
 *   fan-out stored while the lease was held, and whose job it skipped, is found then.
 * - A worker that dies mid-way leaves the head without a job; the lease ends with its period and
 *   the reconciler gives the head its job, as for a lost job.
 * - While a head is attempted, the next one's round is claimed and its account's earlier fan-outs
 *   watched, then it is read; once the head is confirmed (HTTP 200), the next one is attempted
 *   while the head's record is written. Read after its claim and the watch, it is attempted as read
 *   (`RoundRef.claimedAhead`), and its own record is written only once the head's has committed
 *   (`RoundRef.recordAfter`). A crash or a failed record in between leaves both pending, so both are
 *   sent again, in order: an event sent again is followed by every later one already sent, the rule
 *   of Google Pub/Sub's ordering keys (cloud.google.com/pubsub/docs/ordering, "Message
 *   redelivery"), and the last copy of each event reaches the callback in acceptance order. Each
 *   event is still sent first only once the one before it was confirmed, and only once the record of
 *   the one two before it committed: at most two heads are sent and not yet recorded at a time (a
 *   read of the next head leaves both out).
 * - A head sent this way asks its subscription's gate for nothing (the gate never holds a
 *   subscription below one attempt in flight, and the hand-over sends one head at a time), and goes
 *   on the host slot the head before it was confirmed on (`RoundRef.hostSlot`) instead of giving it
 *   back and asking again; the host's cap still counts it. Other accounts waiting for the host lose
 *   nothing while the account holds no more than its share of the host: released, the slot would
 *   be free and the account under its share, so its next head would take it first. An account over
 *   its share through other subscriptions keeps this one slot for the rest of the hand-over (at
 *   most `maxHeads` heads). The last one goes back when the hand-over stops.
 *
 * Each head is attempted in a trace of its own, never in the trace of the job that started the
 * hand-over (another event's).
 */
import { context, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { deliveryJobId } from '@webhooks/shared';
import type { AttemptClaims, ClaimAhead } from './claim.js';
import type { FifoHead, FifoHeads, HandOverLease } from './fifo.js';
import type { Deliver } from './deliver.js';
import type { HeldHostSlot, HostGate } from './host-gate.js';
import { followUpJob, type DeliveryJobSpec } from './inline.js';
import { handsOverNext, type DeliveryStep, type RoundRef } from './step.js';
import type { DeliveryStore, LoadedDelivery } from './store.js';

/** The head `loaded` is, as the hand-over's rules name it. */
export function headOf(loaded: LoadedDelivery): FifoHead {
  return {
    eventId: loaded.event.id,
    subscriptionId: loaded.subscription.id,
    accountId: loaded.subscription.accountId,
    round: loaded.round,
  };
}

/**
 * The round a handed-over head runs: its first round under its job's id, as if its job had been
 * created `now` (ms since the epoch), with `maxAttempts` (DELIVERY_MAX_ATTEMPTS), handing over
 * its own successor in turn, and starting from `loaded` (the head as just read) when given; null
 * for a later round, which gets its job instead.
 */
export function handedOverRound(
  head: FifoHead,
  maxAttempts: number,
  now: number,
  loaded?: LoadedDelivery,
): RoundRef | null {
  if (head.round !== 0) return null;
  return {
    ...(loaded === undefined ? {} : { loaded }),
    jobId: deliveryJobId(head.eventId, head.subscriptionId, 0),
    eventId: head.eventId,
    subscriptionId: head.subscriptionId,
    accountId: head.accountId,
    round: 0,
    enqueuedAt: now,
    maxAttempts,
    handsOverInOrder: true,
  };
}

/**
 * What follows a handed-over head's step: `next` when it ended and its successor may go now,
 * `job` when it did not end and waits in its job (a retry's or a wait's), `stop` otherwise (it
 * ended and its step did not hand over: nothing of this subscription is left to do here).
 */
export function afterHandedOver(
  head: FifoHead,
  step: DeliveryStep,
  maxAttempts: number,
  now: number,
): { kind: 'next' } | { kind: 'job'; job: DeliveryJobSpec } | { kind: 'stop' } {
  const job = followUpJob(
    { ...head, jobId: deliveryJobId(head.eventId, head.subscriptionId, 0) },
    step,
    maxAttempts,
    now,
  );
  if (job !== null) return { kind: 'job', job };
  if (handsOverNext(step)) return { kind: 'next' };
  return { kind: 'stop' };
}

/** What the hand-over needs. */
export interface InOrderDeps {
  heads: Pick<FifoHeads, 'ensure' | 'takeHandOver'>;
  /** The subscription's head, loaded, and the id of the event after it (`DeliveryStore.loadHead`). */
  loadHead: DeliveryStore['loadHead'];
  /** The claims of the subscriptions' shard, which the step takes too (`claim.ts`). */
  claims: Pick<AttemptClaims, 'takeAhead'>;
  /** Whether an earlier event of the account is still being fanned out (`createFanOutWatch`). */
  earlierFanOut(accountId: string, eventId: string): Promise<boolean>;
  /** The attempt path of the subscriptions' shard. */
  deliver: Deliver;
  /** The host cap the step takes its slots from: a confirmed head's slot not passed on goes back. */
  hostGate: Pick<HostGate, 'giveBack'>;
  /** Adds a head's job to its subscription's shard. @throws BullMQ's errors */
  addJob(job: DeliveryJobSpec): Promise<void>;
  /** DELIVERY_MAX_ATTEMPTS. */
  maxAttempts: number;
  /** Heads one hand-over attempts at most. */
  maxHeads: number;
  /** True once the worker is closing: the hand-over stops before its next head, which gets its job. */
  closing(): boolean;
  log: Logger;
}

/**
 * Creates the hand-over.
 *
 * @returns a function that hands the subscription's heads over, one after another, until one does
 *   not end, none is left, or `maxHeads` went; it never throws (a fault is logged, and the head
 *   gets its job, or from the reconciler when Redis or PostgreSQL refuse that too)
 */
export function createInOrder(deps: InOrderDeps): (subscriptionId: string) => Promise<void> {
  const { heads, log } = deps;

  /**
   * Claims the round of the head expected after the current one (`eventId`'s), and watches its
   * account's earlier fan-outs, while the current one is attempted: null when another run holds
   * the round, an earlier event is still being fanned out, or Redis failed (the next head then
   * goes the step's own way, which claims, watches and checks it after its read).
   */
  const claimAhead = async (head: FifoHead, eventId: string): Promise<ClaimAhead | null> => {
    const [claim, earlier] = await Promise.allSettled([
      deps.claims.takeAhead(deliveryJobId(eventId, head.subscriptionId, 0)),
      deps.earlierFanOut(head.accountId, eventId),
    ]);
    if (claim.status === 'rejected' || claim.value === null) return null;
    if (earlier.status === 'fulfilled' && !earlier.value) return claim.value;
    await claim.value.drop();
    return null;
  };

  /** A head's read (`DeliveryStore.loadHead`). */
  type HeadRead = ReturnType<DeliveryStore['loadHead']>;

  const run = async (subscriptionId: string, lease: HandOverLease) => {
    let ahead: ClaimAhead | null = null;
    let read: HeadRead | null = null;
    /**
     * The last confirmed head: its event, and its step, its record perhaps still being written
     * (and the records before it, which it waited for): whatever ends the hand-over waits for it.
     */
    let recording: { eventId: string; step: Promise<void> } | null = null;
    /** The step of the confirmed head before that one. */
    let recordingBefore: Promise<void> | null = null;
    /** The host's slot the last confirmed head went on, until the next head is given it. */
    let slot: HeldHostSlot | null = null;
    try {
      for (let handed = 0; handed < deps.maxHeads && !deps.closing(); handed++) {
        if (handed > 0) await lease.renew();
        const found = await (read ?? deps.loadHead(subscriptionId));
        read = null;
        if (found === null) return;
        const head = headOf(found.head);
        const ref = handedOverRound(head, deps.maxAttempts, Date.now(), found.head);
        if (ref === null) return;
        // The claim taken ahead is used only if the head is its round, and held again meanwhile.
        const keeping: Promise<void> | null = ahead?.jobId === ref.jobId ? ahead.keep() : null;
        keeping?.catch(() => undefined);
        const claimedAhead = keeping !== null;
        if (!claimedAhead) await ahead?.drop();
        ahead = null;
        const previous = recording;
        // At most two heads are sent and not recorded: the one before the previous is in the log
        // before this one goes. A head not claimed ahead is checked by its step in the log, where
        // the previous one must be recorded first; one claimed ahead goes now, its record after the
        // previous one's.
        await recordingBefore;
        if (!claimedAhead) await previous?.step;
        const nextEventId: string | null = handed + 1 < deps.maxHeads ? found.nextEventId : null;
        const claiming: Promise<ClaimAhead | null> | null =
          nextEventId === null ? null : context.with(ROOT_CONTEXT, () => claimAhead(head, nextEventId));
        // The next head is read after its round's claim and watch, leaving out this head and the
        // previous one, whose records may not have committed: while this one is attempted when the
        // next one is known, else once this one is confirmed. It is used only then.
        const readAfter = () => {
          const reading = (async () => {
            await claiming;
            return deps.loadHead(
              subscriptionId,
              previous === null ? [head.eventId] : [previous.eventId, head.eventId],
            );
          })();
          reading.catch(() => undefined);
          return reading;
        };
        const early: HeadRead | null = claiming === null ? null : readAfter();
        const readNext = () => {
          read = early ?? readAfter();
        };
        let confirm = () => {};
        const confirmed = new Promise<'confirmed'>((resolve) => {
          confirm = () => resolve('confirmed');
        });
        const round: RoundRef = {
          ...ref,
          ...(claimedAhead ? { claimedAhead: true } : {}),
          ...(claimedAhead && previous !== null ? { recordAfter: previous.step } : {}),
          ...(slot === null ? {} : { hostSlot: slot }),
        };
        slot = null;
        const stepping = context.with(ROOT_CONTEXT, () =>
          deps.deliver(round, (passed) => {
            slot = passed;
            readNext();
            confirm();
          }),
        );
        try {
          const step = await Promise.race([stepping, confirmed]);
          if (step === 'confirmed') {
            // Confirmed: the next head goes while this one's record is written, and records after it.
            recordingBefore = previous?.step ?? null;
            recording = { eventId: head.eventId, step: stepping.then(() => undefined) };
            recording.step.catch(() => undefined);
            continue;
          }
          const next = afterHandedOver(head, step, deps.maxAttempts, Date.now());
          if (next.kind === 'job') {
            await context.with(ROOT_CONTEXT, () => deps.addJob(next.job));
            return;
          }
          if (next.kind === 'stop') return;
        } finally {
          ahead = await claiming;
          await keeping;
        }
      }
    } finally {
      // The heads' jobs come after this, from the log: the last confirmed head must be in it first.
      const kept = slot as HeldHostSlot | null;
      await Promise.all([
        ahead?.drop(),
        recording?.step,
        kept === null ? null : deps.hostGate.giveBack(kept),
      ]);
    }
  };

  return async (subscriptionId) => {
    let lease: HandOverLease | null | undefined;
    try {
      lease = await heads.takeHandOver(subscriptionId);
    } catch (error) {
      log.warn({ err: error, subscriptionId }, 'ordered hand-over not taken; the next delivery gets its job');
    }
    if (lease === null) return;
    if (lease !== undefined) {
      try {
        await run(subscriptionId, lease);
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'ordered hand-over stopped by a fault');
      } finally {
        await lease.release();
      }
    }
    try {
      await heads.ensure([subscriptionId]);
    } catch (error) {
      log.warn({ err: error, subscriptionId }, 'next ordered delivery not queued; the reconciler will');
    }
  };
}
