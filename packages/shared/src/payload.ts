/**
 * The JSON payload POSTed to a callback URL (specification section 2.2): `timestamp`, `type`,
 * `webhook_id` and `data`, with the event's own content nested in `data`, never at the top level.
 */
import { typesReceivedBy } from './catalogue.js';
import type { WebhookPayload } from './schemas/delivery.js';

/**
 * Builds the payload of one event for one subscription.
 *
 * @param event `timestamp` in payload form (see formatPayloadTimestamp), `type`, `data`
 * @param subscription its `kind` (null: every type) and client-chosen `webhookId`
 */
export function buildDeliveryPayload(
  event: { timestamp: string; type: string; data: Record<string, unknown> },
  subscription: { kind: string | null; webhookId: string | null },
): WebhookPayload {
  return {
    timestamp: event.timestamp,
    ...(typesReceivedBy(subscription.kind).length > 1 ? { type: event.type } : {}),
    ...(subscription.webhookId !== null ? { webhook_id: subscription.webhookId } : {}),
    data: event.data,
  };
}
