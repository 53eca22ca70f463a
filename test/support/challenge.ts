/**
 * A callback that answers the signed challenge of a verification request
 * (CALLBACK_VERIFICATION=challenge) with `{"challenge": "…"}`, and 200 to anything else: a
 * receiver script for the verification tests.
 */
import type { FullAnswer, ReceivedRequest } from '../../scripts/lib/receiver.js';

/** The answer to `request`: the challenge echoed when it is a `webhook.verification`, else 200. */
export function echoChallenge(request: ReceivedRequest): FullAnswer | number {
  const payload = JSON.parse(request.body) as { type?: string; data?: { challenge?: string } };
  return payload.type === 'webhook.verification'
    ? { status: 200, body: JSON.stringify({ challenge: payload.data?.challenge }) }
    : 200;
}
