/**
 * What `PUT /api/webhooks/{id}` changes: a pure function from the checked request and the stored
 * row to the columns to write and the follow-ups to run. Fields left out of the request are
 * left out of the change, which Prisma then leaves as they are.
 */
import type { Prisma, Subscription } from '@webhooks/db';
import type { SubscriptionUpdate } from '@webhooks/shared';
import { HttpProblem } from './problem.js';
import type { storedFilter } from './subscription-selection.js';

type Body = SubscriptionUpdate;

/** The request's fields once checked, sealed and stored as columns; each is absent when not sent. */
export interface SubscriptionUpdateRequest {
  /** The new callback URL, or the broker target's stored form (`writeTarget`). */
  callbackUrl?: string | undefined;
  /** True for a broker destination, false for an HTTP callback, absent when neither was sent. */
  toBroker?: boolean | undefined;
  webhookId?: Body['webhook_id'] | undefined;
  status?: Body['status'] | undefined;
  rateLimit?: Body['rate_limit'] | undefined;
  eventTypes?: Body['event_types'] | undefined;
  filter?: ReturnType<typeof storedFilter> | undefined;
  ordering?: Body['ordering'] | undefined;
  /** Sealed custom headers (`sealedCustomHeaders`). */
  headers?: string | null | undefined;
  /** Sealed client certificate (`sealedClientCertificate`). */
  clientTls?: string | null | undefined;
  /** Sealed receiver authentication (`sealReceiverAuth`). */
  auth?: string | null | undefined;
  transformation?: Body['transformation'] | undefined;
}

/** The change to apply, and what must follow it. */
export interface SubscriptionChange {
  data: Prisma.SubscriptionUpdateInput;
  /** A new HTTP callback under CALLBACK_VERIFICATION=challenge: it must answer its challenge. */
  moved: boolean;
  /** FIFO → none: the deliveries that waited their turn without a job get one. */
  leavesFifo: boolean;
}

/**
 * The change `request` makes to `current`.
 *
 * Status rules (docs/delivery.md, "Callback verification"): a moved callback is `pending` whatever
 * status was asked, since disabling and re-enabling it would otherwise skip its challenge; a
 * pending callback that becomes a broker destination is `active` (a broker answers no challenge);
 * re-activating resets the failure count, or one more failure would disable it again.
 *
 * @param verifyCallbacks CALLBACK_VERIFICATION=challenge
 * @throws HttpProblem 409 `verification-pending` for a status change while the callback is
 *   `pending`: any status change would let an unverified callback through later
 */
export function subscriptionChange(
  request: SubscriptionUpdateRequest,
  current: Pick<Subscription, 'status' | 'callbackUrl' | 'ordering'>,
  verifyCallbacks: boolean,
): SubscriptionChange {
  if (current.status === 'pending' && request.status !== undefined) {
    throw new HttpProblem(
      409,
      'verification-pending',
      'The callback has not answered its challenge yet; answer it, then POST .../verification to ask again',
    );
  }
  const moved =
    verifyCallbacks &&
    request.toBroker === false &&
    request.callbackUrl !== undefined &&
    request.callbackUrl !== current.callbackUrl;
  const toVerifiedBroker = request.toBroker === true && current.status === 'pending';
  let status: Subscription['status'] | undefined = request.status;
  if (moved) status = 'pending';
  else if (toVerifiedBroker) status = 'active';
  return {
    data: definedFields({
      callbackUrl: request.callbackUrl,
      webhookId: request.webhookId,
      status,
      rateLimit: request.rateLimit,
      eventTypes: request.eventTypes,
      filter: request.filter,
      ordering: request.ordering,
      headers: request.headers,
      clientTls: request.clientTls,
      auth: request.auth,
      transformation: request.transformation,
      consecutiveFailures: request.status === 'active' ? 0 : undefined,
    }),
    moved,
    leavesFifo: current.ordering === 'fifo' && request.ordering === 'none',
  };
}

/** `fields` without its undefined entries: how a partial update says "keep this column". */
function definedFields<T extends object>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
