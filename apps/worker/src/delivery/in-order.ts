/**
 * Ordered delivery's hand-over: when a FIFO head ends, its worker attempts the next at once through
 * `deliver.ts`, under the subscription's hand-over lease, until a head does not end, `maxHeads` or
 * closing. The next head is claimed and read while the head is attempted, and sent while its record is
 * written; its record waits for that one, so a crash sends both again, in order (Google Pub/Sub's rule).
 * It asks its gate for nothing.
 */
import { context, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { deliveryJobId } from '@webhooks/shared';
import type { AttemptClaims, ClaimAhead } from './claim.js';
import type { FifoHead, FifoHeads, HandOverLease } from './fifo.js';
import type { Deliver } from './deliver.js';
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
 * The round a handed-over head runs: its first round under its job's id, as if created `now` (ms),
 * with `maxAttempts`, handing over its successor, from `loaded` when given; null for a later round (it gets its job).
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
  };
}

/** After a handed-over head's step: `next` (its successor may go), `job` (it waits in its job) or `stop`. */
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
 * Creates the hand-over: a function that hands the heads over until one does not end, none is left,
 * or `maxHeads` went. Never throws: a fault is logged and the head gets its job (or the reconciler's).
 */
export function createInOrder(deps: InOrderDeps): (subscriptionId: string) => Promise<void> {
  const { heads, log } = deps;

  /** Claims and watches the expected next head while the current one is attempted; null when it cannot. */
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

  type HeadRead = ReturnType<DeliveryStore['loadHead']>;

  const run = async (subscriptionId: string, lease: HandOverLease) => {
    let ahead: ClaimAhead | null = null;
    let read: HeadRead | null = null;
    /** The last confirmed head and its step (its record perhaps still written): ending the hand-over waits for it. */
    let recording: { eventId: string; step: Promise<void> } | null = null;
    /** The step of the confirmed head before that one. */
    let recordingBefore: Promise<void> | null = null;
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
        // At most two heads are sent and unrecorded. A head not claimed ahead is checked by its step
        // in the log (the previous recorded first); one claimed ahead goes now, recorded after it.
        await recordingBefore;
        if (!claimedAhead) await previous?.step;
        const nextEventId: string | null = handed + 1 < deps.maxHeads ? found.nextEventId : null;
        const claiming: Promise<ClaimAhead | null> | null =
          nextEventId === null ? null : context.with(ROOT_CONTEXT, () => claimAhead(head, nextEventId));
        // Read after its claim and watch, leaving out the two heads whose records may not have committed.
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
        };
        const stepping = context.with(ROOT_CONTEXT, () =>
          deps.deliver(round, () => {
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
      await Promise.all([ahead?.drop(), recording?.step]);
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
