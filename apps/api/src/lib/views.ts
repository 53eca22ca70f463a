/**
 * Database rows to wire resources (snake_case, ISO 8601 dates, `resource_uri` links as the
 * specification's hypermedia convention asks, section 1).
 */
import type { Delivery, DeliveryAttempt, Event, Subscription as SubscriptionRow } from '@webhooks/db';
import {
  buildDeliveryPayload,
  deliveriesUri,
  deliveryUri,
  subscriptionUri,
  formatPayloadTimestamp,
  typesReceivedBy,
  type DeliveryThrottle,
  type Delivery as DeliveryView,
  type DeliveryDetail,
  type Subscription,
} from '@webhooks/shared';

export { deliveriesUri, deliveryUri, subscriptionUri };

/**
 * A subscription row as the API returns it (never with its secret), with its current pacing
 * (`delivery`, read from the delivery gate in Redis).
 */
export function toSubscription(row: SubscriptionRow, throttle: DeliveryThrottle): Subscription {
  return {
    id: row.id,
    resource_uri: subscriptionUri(row.id),
    callback_url: row.callbackUrl,
    webhook_id: row.webhookId,
    account_id: row.accountId,
    kind: row.kind as Subscription['kind'],
    event_types: [...typesReceivedBy(row.kind)],
    status: row.status,
    rate_limit: row.rateLimit,
    delivery: throttle,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** A delivery row with its event's type, as listed. */
export function toDelivery(row: Delivery & { event: Pick<Event, 'type'> }): DeliveryView {
  return {
    id: row.id,
    resource_uri: deliveryUri(row.subscriptionId, row.id),
    subscription: { resource_uri: subscriptionUri(row.subscriptionId) },
    event_id: row.eventId,
    type: row.event.type,
    status: row.status,
    attempts_made: row.attemptsMade,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** A delivery with the payload it sends and every attempt, oldest first. */
export function toDeliveryDetail(
  row: Delivery & { event: Event; attempts: DeliveryAttempt[] },
  subscription: Pick<SubscriptionRow, 'kind' | 'webhookId'>,
): DeliveryDetail {
  const payload = buildDeliveryPayload(
    {
      timestamp: formatPayloadTimestamp(row.event.occurredAt),
      type: row.event.type,
      data: row.event.data as Record<string, unknown>,
    },
    subscription,
  );
  return {
    ...toDelivery(row),
    payload: { ...payload },
    attempts: row.attempts.map((attempt) => ({
      attempt_number: attempt.attemptNumber,
      started_at: attempt.startedAt.toISOString(),
      duration_ms: attempt.durationMs,
      status_code: attempt.statusCode,
      error: attempt.errorClass,
      error_message: attempt.errorMessage,
      response_body: attempt.responseBody,
      in_flight_limit: attempt.inFlightLimit,
    })),
  };
}
