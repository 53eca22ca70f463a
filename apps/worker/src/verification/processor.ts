/**
 * The `verifications` queue's processor: sends a `pending` callback its signed challenge through the
 * delivery sender, makes it `active` when answered and sends the deliveries that waited. BullMQ's
 * backoff retries failures; the host's cap holds a challenge back without spending a try.
 */
import type { ReceiverAuthorizer } from '../delivery/receiver-authorization.js';
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import {
  openClientCertificate,
  openCustomHeaders,
  openReceiverAuth,
  type SecretBox,
  type VerificationJobData,
} from '@webhooks/shared';
import type { AttemptSender } from '../delivery/attempt.js';
import type { HostGate } from '../delivery/host-gate.js';
import { answersChallenge, buildChallengeRequest, newChallenge } from './challenge.js';

/** What a verification job came to. */
export type VerificationResult = 'verified' | 'not_pending';

export interface VerificationDeps {
  pool: Pool;
  sender: AttemptSender;
  /** The receiver's `Authorization`: a challenge carries it as a delivery does. */
  authorizer: ReceiverAuthorizer;
  secretBox: SecretBox;
  /** The deliveries' host cap in a subscription's shard. */
  hostGate: (subscriptionId: string) => HostGate;
  /** Sends now the deliveries waiting for the verification (else they look every 10 s); never throws. */
  wakeDeliveries(subscriptionId: string): Promise<void>;
  log: Logger;
}

/**
 * Creates the processor.
 * @throws Error when the callback did not answer the challenge (BullMQ retries), or PostgreSQL or Redis failed
 * @throws DelayedError when the host's cap holds the challenge back (no try is used)
 */
export function createVerificationProcessor(deps: VerificationDeps) {
  return async (job: Job<VerificationJobData>, token?: string): Promise<VerificationResult> => {
    const { subscriptionId } = job.data;
    const { rows } = await deps.pool.query<{
      account_id: string;
      callback_url: string;
      webhook_id: string | null;
      status: string;
      secret: string;
      headers: string | null;
      client_tls: string | null;
      auth: string | null;
    }>(
      `SELECT account_id, callback_url, webhook_id, status::text, secret, headers, client_tls, auth FROM subscriptions WHERE id = $1::uuid`,
      [subscriptionId],
    );
    const [row] = rows;
    if (row === undefined || row.status !== 'pending') return 'not_pending';
    const { hostname } = new URL(row.callback_url);
    const slotId = `verification:${job.id ?? subscriptionId}`;
    const hostGate = deps.hostGate(subscriptionId);
    const hostWaitMs = await hostGate.acquire(hostname, row.account_id, slotId);
    if (hostWaitMs > 0) {
      await job.moveToDelayed(Date.now() + hostWaitMs, token);
      throw new DelayedError();
    }
    let answer: Awaited<ReturnType<AttemptSender['send']>>;
    const challenge = newChallenge();
    try {
      const { body, headers } = buildChallengeRequest(
        {
          webhookId: row.webhook_id,
          secret: deps.secretBox.open(row.secret, subscriptionId),
          headers: openCustomHeaders(row.headers, subscriptionId, deps.secretBox),
        },
        challenge,
        new Date(),
      );
      const clientCertificate = openClientCertificate(row.client_tls, subscriptionId, deps.secretBox);
      const auth = openReceiverAuth(row.auth, subscriptionId, deps.secretBox);
      answer = await deps.authorizer.send(subscriptionId, auth, (authorization) =>
        deps.sender.send(
          row.callback_url,
          body,
          authorization === undefined ? headers : { ...headers, authorization },
          clientCertificate,
        ),
      );
    } finally {
      await hostGate.release(hostname, row.account_id, slotId);
    }
    if (!answersChallenge(answer, challenge)) {
      const what = answer.statusCode === null ? answer.errorClass : `HTTP ${answer.statusCode}`;
      throw new Error(`the callback did not answer the challenge (${what})`);
    }
    const { rowCount } = await deps.pool.query(
      `UPDATE subscriptions SET status = 'active', updated_at = now()
      WHERE id = $1::uuid AND status = 'pending' AND callback_url = $2`,
      [subscriptionId, row.callback_url],
    );
    deps.log.info({ subscriptionId }, 'callback verified');
    if (rowCount === 1) await deps.wakeDeliveries(subscriptionId);
    return 'verified';
  };
}
