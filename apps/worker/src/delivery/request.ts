/**
 * The request of one attempt: the JSON body of specification section 2.2 and the Standard
 * Webhooks headers (`webhook-id` = the event id, the same on every retry so receivers can
 * de-duplicate; `webhook-timestamp` = unix seconds of this attempt; `webhook-signature`, one
 * signature per live secret).
 */
import { buildDeliveryPayload, formatPayloadTimestamp, signatureHeader } from '@webhooks/shared';
import type { Event, Subscription } from '@webhooks/db';

/** Body and headers of an attempt made at `now`. */
export function buildAttemptRequest(
  event: Pick<Event, 'id' | 'type' | 'data' | 'occurredAt'>,
  subscription: Pick<Subscription, 'kind' | 'webhookId' | 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>,
  now: Date,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(
    buildDeliveryPayload(
      {
        timestamp: formatPayloadTimestamp(event.occurredAt),
        type: event.type,
        data: event.data as Record<string, unknown>,
      },
      subscription,
    ),
  );
  const secrets = [subscription.secret];
  const previousLive = subscription.previousSecretExpiresAt !== null && subscription.previousSecretExpiresAt > now;
  if (subscription.previousSecret !== null && previousLive) secrets.push(subscription.previousSecret);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureHeader(secrets, event.id, now, body),
    },
  };
}
