/** What `PUT /api/webhooks/{id}` changes: a pure function from the request and the row to columns and follow-ups. */
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
  /** Sealed AWS destination credentials (`destinationCredentials`). */
  destinationCredentials?: string | null | undefined;
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
 * The change `request` makes to `current` (docs/delivery.md, "Callback verification"): a moved
 * callback is `pending` whatever was asked (else disable and enable would skip its challenge); a
 * pending callback made a broker destination is `active`; re-activating resets the failure count.
 * @param verifyCallbacks CALLBACK_VERIFICATION=challenge
 * @throws HttpProblem 409 `verification-pending` for a status change while `pending`
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
      destinationCredentials: request.destinationCredentials,
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
