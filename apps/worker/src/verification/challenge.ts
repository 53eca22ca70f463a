/**
 * Callback verification's signed challenge (as Slack's `url_verification`, Zoom's validation): a
 * POST of `{"type": "webhook.verification", "timestamp", "webhook_id"?, "data": {"challenge"}}`
 * signed like a delivery; the callback answers 200 with the challenge as the body or its `challenge`.
 */
import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { formatPayloadTimestamp, signatureHeader } from '@webhooks/shared';

/** The `type` of a challenge payload. */
export const challengeType = 'webhook.verification';

/** A fresh challenge: 32 random bytes, base64url. */
export function newChallenge(): string {
  return randomBytes(32).toString('base64url');
}

/** The challenge request's body and headers at `now`, with the custom headers so a gateway lets it through. */
export function buildChallengeRequest(
  subscription: { webhookId: string | null; secret: string; headers: Record<string, string> },
  challenge: string,
  now: Date,
): { body: string; headers: Record<string, string> } {
  const id = `verify_${uuidv7()}`;
  const body = JSON.stringify({
    type: challengeType,
    timestamp: formatPayloadTimestamp(now),
    ...(subscription.webhookId === null ? {} : { webhook_id: subscription.webhookId }),
    data: { challenge },
  });
  return {
    body,
    headers: {
      ...subscription.headers,
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureHeader([subscription.secret], id, now, body),
    },
  };
}

/** Whether an answer proves the callback: exactly 200, with `challenge` as the trimmed body or a JSON body's member. */
export function answersChallenge(
  answer: { statusCode: number | null; responseBody: string | null },
  challenge: string,
): boolean {
  if (answer.statusCode !== 200 || answer.responseBody === null) return false;
  const body = answer.responseBody.trim();
  if (body === challenge) return true;
  try {
    const parsed: unknown = JSON.parse(body);
    return (
      typeof parsed === 'object' &&
      parsed !== null &&
      (parsed as { challenge?: unknown }).challenge === challenge
    );
  } catch {
    return false;
  }
}
