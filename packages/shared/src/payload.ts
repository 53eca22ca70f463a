/**
 * The JSON payload POSTed to a callback URL (specification section 2.2): `timestamp`, `type`,
 * `webhook_id` and `data`, with the event's own content nested in `data`, never at the top level.
 */
import { typesReceivedBy } from './catalogue.js';

/** The body of a delivery. */
export interface DeliveryPayload {
  /** When the event occurred: UTC, ISO 8601 with fractional seconds, no zone designator. */
  timestamp: string;
  /** `<resource>.<action>`; present when the subscription can receive more than one type. */
  type?: string;
  /** Echo of the subscription's `webhook_id`; present only when the client gave one. */
  webhook_id?: string;
  /** The event's content. */
  data: Record<string, unknown>;
}

/**
 * Builds the payload of one event for one subscription.
 *
 * @param event `timestamp` in payload form (see formatPayloadTimestamp), `type`, `data`
 * @param subscription its `kind` (null: every type) and client-chosen `webhookId`
 */
export function buildDeliveryPayload(
  event: { timestamp: string; type: string; data: Record<string, unknown> },
  subscription: { kind: string | null; webhookId: string | null },
): DeliveryPayload {
  return {
    timestamp: event.timestamp,
    ...(typesReceivedBy(subscription.kind).length > 1 ? { type: event.type } : {}),
    ...(subscription.webhookId !== null ? { webhook_id: subscription.webhookId } : {}),
    data: event.data,
  };
}
