/**
 * A first delivery as the account scheduler holds it, and as an inline attempt takes it: the
 * scheduler's entry value for it, and the inline candidate it becomes once admitted (its job id,
 * lane, the delivery its fan-out created, its event's trace context).
 */
import type { Context } from '@opentelemetry/api';
import { deliveryJobId } from '@webhooks/shared';
import type { InlineCandidate } from '../delivery/inline.js';
import type { LoadedDelivery } from '../delivery/store.js';
import { inlineMark } from './admission-script.js';

/** A delivery's first round waiting for its account's turn. */
export interface ScheduledDelivery {
  accountId: string;
  eventId: string;
  subscriptionId: string;
  /** The publishing request's `X-Request-Id`, for the attempt's log lines. */
  requestId?: string;
  /**
   * The fan-out created its row just now. Only such a delivery may be attempted inline: one
   * scheduled again (a fan-out run again) may have its job already, under the same id.
   */
  created?: boolean;
  /**
   * The delivery as its fan-out created it (`createdDelivery` in delivery/store.ts), opened only
   * for an inline attempt of it, which then skips the load.
   *
   * @throws the secret box's error when no configured key opens its signing secret
   */
  loaded?: () => LoadedDelivery;
  /** The trace context of its event's fan-out job (`InlineCandidate.traceContext`). */
  traceContext?: Context;
}

/**
 * The BullMQ priority of a backlogged account's deliveries. BullMQ's workers take the wait list
 * (jobs without a priority) before the prioritized set, so a quiet account's delivery starts ahead
 * of the flood's admitted jobs; their retries and parked jobs keep the priority, and so the lane.
 */
const backloggedPriority = 1;

/** The entry value of a scheduled delivery (`sched:entries`). */
export function entryValue(delivery: ScheduledDelivery): string {
  const value = `${delivery.accountId}\t${delivery.requestId ?? ''}`;
  return delivery.created === true ? inlineMark + value : value;
}

/**
 * `candidate` with the delivery its fan-out created, when `delivery` has it and its secret opens
 * (otherwise the attempt loads the delivery, and reports a secret that does not open, as any
 * other), and with its event's trace context.
 */
export function withLoaded(
  candidate: InlineCandidate,
  delivery: ScheduledDelivery | undefined,
): InlineCandidate {
  const traced =
    delivery?.traceContext === undefined ? candidate : { ...candidate, traceContext: delivery.traceContext };
  if (delivery?.loaded === undefined) return traced;
  try {
    return { ...traced, loaded: delivery.loaded() };
  } catch {
    return traced;
  }
}

/**
 * A first delivery as an inline attempt's candidate, from its job id (`<event id>.<subscription
 * id>`); `backLane`: admitted for a backlogged account, so its job keeps the back lane's priority.
 */
export function candidateOfJob(
  jobId: string,
  requestId: string | undefined,
  backLane: boolean,
): InlineCandidate {
  const [eventId, subscriptionId] = jobId.split('.') as [string, string];
  return {
    jobId,
    eventId,
    subscriptionId,
    ...(requestId === undefined || requestId === '' ? {} : { requestId }),
    ...(backLane ? { priority: backloggedPriority } : {}),
  };
}

/** A scheduled delivery as an inline attempt's candidate (its first round, front lane). */
export const candidateOf = (d: ScheduledDelivery): InlineCandidate => ({
  ...candidateOfJob(deliveryJobId(d.eventId, d.subscriptionId), d.requestId, false),
  ...(d.traceContext === undefined ? {} : { traceContext: d.traceContext }),
});
