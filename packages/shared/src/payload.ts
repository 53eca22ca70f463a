/**
 * The JSON payload POSTed to a callback URL (docs/api.md#what-a-callback-receives): `timestamp`, `type`,
 * `webhook_id` and `data`, with the event's own content nested in `data`, never at the top level.
 * `type` is always there: the specification asks for it where one endpoint carries several kinds
 * of event, and since subscriptions choose their types any endpoint can.
 */
import type { WebhookPayload } from './schemas/delivery.js';

/**
 * Builds the payload of one event for one subscription.
 *
 * @param event `timestamp` in payload form (see formatPayloadTimestamp), `type`, `data`
 * @param subscription its client-chosen `webhookId`
 */
export function buildDeliveryPayload(
  event: { timestamp: string; type: string; data: Record<string, unknown> },
  subscription: { webhookId: string | null },
): WebhookPayload {
  return {
    timestamp: event.timestamp,
    type: event.type,
    ...(subscription.webhookId !== null ? { webhook_id: subscription.webhookId } : {}),
    data: event.data,
  };
}
