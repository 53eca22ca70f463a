/**
 * Receiving: a delivery's signature checked with `standardwebhooks`, the code the service signs with
 * (Standard Webhooks: `webhook-timestamp` within 5 minutes, an HMAC-SHA256 of the raw body).
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './schema.js';

export { WebhookVerificationError };

/** The JSON body of a delivery: `timestamp`, `type`, `webhook_id` and `data`. */
export type WebhookPayload = components['schemas']['WebhookPayload'];

/** Request headers as Node (`req.headers`), Fastify, Express or the Fetch API give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => (out[name] = value));
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name.toLowerCase()] = first;
  }
  return out;
}

/**
 * The payload of a delivery, once its signature is verified.
 * @param secret the signing secret, `whsec_…` (during a rotation either verifies)
 * @param body the raw request body, exactly as received
 * @param headers the request headers, with `webhook-id`, `webhook-timestamp`, `webhook-signature`
 * @throws WebhookVerificationError when a header is missing, the timestamp is over 5 minutes off, or no
 *   signature matches: answer anything but 200 and the service retries
 */
export function verifyWebhook(
  secret: string,
  body: string | Buffer,
  headers: WebhookHeaders,
): WebhookPayload {
  return new Webhook(secret).verify(body, plainHeaders(headers)) as WebhookPayload;
}
