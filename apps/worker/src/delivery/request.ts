/**
 * The request of one attempt: the JSON body of docs/api.md#what-a-callback-receives and the Standard
 * Webhooks headers (`webhook-id` = the event id, the same on every retry so receivers can
 * de-duplicate; `webhook-timestamp` = unix seconds of this attempt; `webhook-signature`, one
 * signature per live secret), after the subscription's custom headers, whose names never collide
 * with these (`custom-headers.ts` in @webhooks/shared refuses them).
 */
import { buildDeliveryPayload, formatPayloadTimestamp, signatureHeader } from '@webhooks/shared';
import type { LoadedDelivery } from './store.js';

/** Body and headers of an attempt made at `now`. */
export function buildAttemptRequest(
  event: LoadedDelivery['event'],
  subscription: LoadedDelivery['subscription'],
  now: Date,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(
    buildDeliveryPayload(
      {
        timestamp: formatPayloadTimestamp(event.occurredAt),
        type: event.type,
        data: event.data,
      },
      subscription,
    ),
  );
  const secrets = [subscription.secret];
  const previousLive =
    subscription.previousSecretExpiresAt !== null && subscription.previousSecretExpiresAt > now;
  if (subscription.previousSecret !== null && previousLive) secrets.push(subscription.previousSecret);
  return {
    body,
    headers: {
      ...subscription.headers,
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureHeader(secrets, event.id, now, body),
    },
  };
}
