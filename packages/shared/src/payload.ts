/**
 * The JSON payload POSTed to a callback (docs/api.md#what-a-callback-receives): `timestamp`, `type`,
 * `webhook_id`, and the event's content in `data`. `type` is always there: any endpoint may carry several.
 */
import type { WebhookPayload } from './schemas/delivery.js';

/** One event's payload for one subscription: `event`'s `timestamp` (payload form), `type`, `data`, and its `webhookId`. */
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
