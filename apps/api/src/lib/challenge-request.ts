/**
 * Asking a pending subscription's callback for its challenge (CALLBACK_VERIFICATION=challenge):
 * the verification job (`verificationJob` in @webhooks/shared, deduplicated per subscription and
 * callback URL), and, when the one already queued is waiting out its retry's backoff (10 s, then
 * doubling), that try sent now, so that a client who fixed its callback and asks again is answered
 * in a moment instead of at the next try (BullMQ's `Job.promote`,
 * https://docs.bullmq.io/guide/jobs/delayed). Each ask sends at most one try; none while one is
 * being sent, and the tries keep their limit.
 */
import type { Queue } from 'bullmq';
import { verificationJob, type VerificationJobData } from '@webhooks/shared';

/**
 * Queues the challenge of `subscriptionId`'s callback at `callbackUrl`, or sends the queued one's
 * next try now.
 *
 * @throws BullMQ's and ioredis' errors when Redis cannot be reached
 */
export async function requestChallenge(
  queue: Queue<VerificationJobData>,
  subscriptionId: string,
  callbackUrl: string,
): Promise<void> {
  const { name, data, opts } = verificationJob(subscriptionId, callbackUrl);
  const { id } = await queue.add(name, data, opts);
  const job = id === undefined ? undefined : await queue.getJob(id);
  if (job === undefined || !(await job.isDelayed())) return;
  try {
    await job.promote();
  } catch (error) {
    // It left the delayed set meanwhile: its try is under way already.
    if (await job.isDelayed()) throw error;
  }
}
