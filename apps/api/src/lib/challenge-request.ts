/**
 * Asking a pending callback for its challenge: the verification job (deduplicated per subscription
 * and URL), or, when the queued one waits out its backoff, that try sent now (`Job.promote`), so a
 * fixed callback is answered at once. One try per ask at most; the tries keep their limit.
 */
import type { Queue } from 'bullmq';
import { verificationJob, type VerificationJobData } from '@webhooks/shared';

/**
 * Queues `subscriptionId`'s challenge at `callbackUrl`, or sends the queued one's next try now.
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
