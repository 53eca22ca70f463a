/**
 * Signing secrets and delivery signatures in the Standard Webhooks format
 * (https://www.standardwebhooks.com, "Signature scheme"): the `webhook-signature` header holds
 * `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the
 * base64-decoded part of the secret after `whsec_`; several signatures are space-separated.
 * The HMAC itself is the `standardwebhooks` package's, the same code clients verify with.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** How long a rotated-out secret keeps signing beside the new one, in milliseconds (24 hours). */
export const secretRotationOverlapMs = 24 * 60 * 60 * 1000;

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The `webhook-signature` header value for one attempt: one `v1,<base64>` signature per secret,
 * space-separated (a rotation sends both).
 *
 * @param secrets signing secrets, `whsec_` + base64 each
 * @param webhookId the `webhook-id` header (the event id)
 * @param timestamp the `webhook-timestamp` of this attempt
 * @param body the exact request body
 */
export function signatureHeader(
  secrets: readonly string[],
  webhookId: string,
  timestamp: Date,
  body: string,
): string {
  return secrets.map((secret) => new Webhook(secret).sign(webhookId, timestamp, body)).join(' ');
}
