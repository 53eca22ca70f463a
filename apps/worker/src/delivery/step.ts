/** A delivery round's step: what the attempt path (`deliver.ts`) is given and returns to its callers. */
import type { Admission } from './gate.js';
import type { DeliveryOutcome } from './outcome.js';
import type { LoadedDelivery } from './store.js';

/** How a round's step ended without an attempt that confirmed or failed. */
export type EndedWithoutAttempt = 'dropped' | 'cancelled' | 'not_pending' | 'expired';

/** What one step came to; `nextInOrder`: it ended a FIFO head (or expired a round), the caller hands over the next. */
export type DeliveryStep =
  /** Nothing more to do for this round, and nothing was sent. */
  | { kind: 'ended'; result: EndedWithoutAttempt; nextInOrder?: true }
  /** Not its turn (gate, rate limit, host, FIFO, unverified, turn): ask in `waitMs`; `inTurnList`: counted already. */
  | { kind: 'wait'; waitMs: number; inTurnList?: boolean }
  /** An attempt was sent and recorded; `failure` is the operator's text of a failed one. */
  | { kind: 'attempted'; outcome: DeliveryOutcome; failure: string; nextInOrder?: true };

/** True when `step` ended a FIFO subscription's head and leaves its successor to the caller. */
export function handsOverNext(step: DeliveryStep): boolean {
  return step.kind !== 'wait' && step.nextInOrder === true;
}

/**
 * Whether `ref` is a FIFO head sent by its hand-over (the only caller passing a FIFO `loaded`): the
 * only attempt of its subscription in flight by the ordering contract, so its gate (limit ≥ 1) is
 * not asked, and a dead worker's lingering slot holds none of these heads back.
 */
export function sentInOrder(ref: RoundRef): boolean {
  return ref.loaded?.subscription.ordering === 'fifo';
}

/** What a head sent in order is admitted under ({@link sentInOrder}): one in flight. */
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
  /** Not admitted by the account scheduler (a retry, a new round): its admission asks its turn too. */
  needsTurn?: boolean;
  /**
   * The delivery as just read, sparing a load: as the fan-out created it (inline; a read would be the
   * same) or as a FIFO head for its hand-over.
   */
  loaded?: LoadedDelivery;
  /**
   * The caller holds the round's claim (`AttemptClaims.takeAhead`) and read `loaded`, a FIFO head,
   * after it and the fan-out watch: the step neither claims nor re-checks, and drops the claim as its own.
   */
  claimedAhead?: boolean;
  /**
   * The previous FIFO head's record, still being written: this step records only once it committed,
   * so a crash sends both again, in order; when it rejects, the step records nothing and throws it.
   */
  recordAfter?: Promise<void>;
}
