/**
 * One attempt's request: the JSON body (docs/api.md#what-a-callback-receives) and the Standard
 * Webhooks headers (`webhook-id`, the event id on every retry; `webhook-timestamp`, this attempt's
 * unix seconds; `webhook-signature`), after custom headers, which may not collide with them.
 */
import { buildDeliveryPayload, formatPayloadTimestamp, signatureHeader } from '@webhooks/shared';
import type { LoadedDelivery } from './store.js';

/** The JSON body the callback gets for `event` (docs/api.md#what-a-callback-receives). */
export function attemptPayload(
  event: LoadedDelivery['event'],
  subscription: LoadedDelivery['subscription'],
): unknown {
  return buildDeliveryPayload(
    { timestamp: formatPayloadTimestamp(event.occurredAt), type: event.type, data: event.data },
    subscription,
  );
}

/** An attempt's body and headers at `now`: `payload` signed as sent, after `customHeaders` (or the transformation's). */
export function buildAttemptRequest(
  event: LoadedDelivery['event'],
  subscription: LoadedDelivery['subscription'],
  now: Date,
  transformed?: { payload: unknown; headers: Record<string, string> },
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(transformed?.payload ?? attemptPayload(event, subscription));
  const secrets = [subscription.secret];
  const previousLive =
    subscription.previousSecretExpiresAt !== null && subscription.previousSecretExpiresAt > now;
  if (subscription.previousSecret !== null && previousLive) secrets.push(subscription.previousSecret);
  return {
    body,
    headers: {
      ...(transformed?.headers ?? subscription.headers),
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureHeader(secrets, event.id, now, body),
    },
  };
}
