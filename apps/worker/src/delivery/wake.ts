/**
 * Waking a delivery job that waits in BullMQ's delayed set, using no attempt (parked behind its
 * gate, waiting for its host's slot, its account's turn or its callback's verification): BullMQ's
 * `promote` (delayed → waiting, in its own lane), the worker's one way to wake a job, whoever
 * decided it may go. A job not delayed yet (its step is still moving it there) is tried once more
 * after {@link wakeRetryMs}; one that still cannot be woken asks again when its own wait ends.
 */
import { Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { DeliveryJobData } from '@webhooks/shared';

/** How long after a missed wake-up a job is tried once more, in ms. */
export const wakeRetryMs = 200;

/**
 * Wakes the delivery jobs `jobIds` (BullMQ job ids), each in the queue `queueOf` names for it
 * (null: none, it is skipped). Resolves once each was woken or found gone, or missed and its one
 * retry scheduled; never throws.
 */
export type Wake = (jobIds: readonly string[]) => Promise<void>;

/** Creates {@link Wake} over `queueOf`; `log` gets a missed wake-up at debug level. */
export function createWake(options: {
  queueOf(jobId: string): Queue<DeliveryJobData> | null;
  log: Logger;
}): Wake {
  /** true when woken or gone, false when it could not be (not delayed yet, Redis away). */
  const promote = async (jobId: string): Promise<boolean> => {
    const queue = options.queueOf(jobId);
    if (queue === null) return true;
    try {
      await (await Job.fromId(queue, jobId))?.promote();
      return true;
    } catch (error) {
      options.log.debug({ err: error, jobId }, 'wake-up of a waiting delivery missed');
      return false;
    }
  };
  return async (jobIds) => {
    const woken = await Promise.all(jobIds.map(promote));
    const again = jobIds.filter((_, i) => !woken[i]);
    if (again.length > 0) setTimeout(() => void Promise.all(again.map(promote)), wakeRetryMs).unref();
  };
}
