/**
 * What one step of a delivery's round is given and what it comes to: the contract between the
 * attempt path (`deliver.ts`) and its callers, the `deliveries` queue's processor
 * (`processor.ts`) and the inline first attempt (`inline.ts`).
 */
import type { Admission } from './gate.js';
import type { DeliveryOutcome } from './outcome.js';
import type { LoadedDelivery } from './store.js';

/** How a round's step ended without an attempt that confirmed or failed. */
export type EndedWithoutAttempt = 'dropped' | 'cancelled' | 'not_pending' | 'expired';

/**
 * What one step came to. `nextInOrder`: the step ended a FIFO subscription's head (or expired a
 * round); the caller hands the subscription's next head over (`in-order.ts`).
 */
export type DeliveryStep =
  /** Nothing more to do for this round, and nothing was sent. */
  | { kind: 'ended'; result: EndedWithoutAttempt; nextInOrder?: true }
  /**
   * Not its turn (gate, rate limit, host cap, FIFO, unverified callback, its account's turn): ask
   * again in `waitMs`. `inTurnList`: it waits in its account's turn list, which counts it already.
   */
  | { kind: 'wait'; waitMs: number; inTurnList?: boolean }
  /** An attempt was sent and recorded; `failure` is the operator's text of a failed one. */
  | { kind: 'attempted'; outcome: DeliveryOutcome; failure: string; nextInOrder?: true };

/** True when `step` ended a FIFO subscription's head and leaves its successor to the caller. */
export function handsOverNext(step: DeliveryStep): boolean {
  return step.kind !== 'wait' && step.nextInOrder === true;
}

/**
 * True when `ref` is a FIFO subscription's head read and sent by its hand-over (`in-order.ts`; no
 * other caller passes a FIFO delivery `loaded`): the only attempt of its subscription in flight by
 * the ordering contract (one head at a time, sent by the holder of the hand-over's lease under its
 * round's claim). The subscription's gate, whose in-flight limit is never below 1, has nothing to
 * hold it back for, and is not asked: a slot the gate still counts (a killed worker's, until its
 * lease ends) holds none of these heads back.
 */
export function sentInOrder(ref: RoundRef): boolean {
  return ref.loaded?.subscription.ordering === 'fifo';
}

/**
 * What a head sent in order is admitted under ({@link sentInOrder}), without asking the gate: one
 * attempt in flight, the limit its attempt is recorded with.
 */
export const oneInFlight: Extract<Admission, { admitted: true }> = {
  admitted: true,
  allowance: '1',
  inFlightLimit: 1,
  averageMs: null,
  threshold: 1,
  probe: false,
  claim: '',
  host: null,
};

/** The round a step runs, as a delivery job names it. */
export interface RoundRef {
  /** The BullMQ job id of the round (`deliveryJobId`): it names the gate's slot. */
  jobId: string;
  eventId: string;
  subscriptionId: string;
  /** The subscription's account, as its job says. */
  accountId: string;
  /** 0 for the first round. */
  round: number;
  requestId?: string;
  /** When the round's job was created (the fan-out's time for an inline attempt), in ms since the epoch. */
  enqueuedAt: number;
  /** The round's attempts in all, the inline first attempt included. */
  maxAttempts: number;
  /**
   * Not admitted by the account scheduler (a retry, a new round): its admission asks its account's
   * turn too (`gate.ts`).
   */
  needsTurn?: boolean;
  /**
   * The delivery as read a moment ago, so the step does not load it again: as the fan-out created
   * it, for its inline first attempt (read back it could only be the same: pending, round 0, no
   * attempt), or as a FIFO subscription's head, for its hand-over (`in-order.ts`).
   */
  loaded?: LoadedDelivery;
  /**
   * The caller holds the round's claim already (`AttemptClaims.takeAhead`), and read `loaded`, a
   * FIFO subscription's head, after taking it and after watching its account's earlier fan-outs
   * (`fifo.ts`): the step neither claims the round nor checks the head again, and drops the claim
   * when it ends, as its own.
   */
  claimedAhead?: boolean;
  /**
   * The record of the FIFO head before this one, confirmed and still being written: the caller
   * attempts this head meanwhile (`in-order.ts`), and the step writes its own record only once that
   * one has committed, so that a crash before either commits sends both again, in order. When it
   * rejects, the step records nothing and throws it.
   */
  recordAfter?: Promise<void>;
}
