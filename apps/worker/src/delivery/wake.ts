/**
 * Waking a delivery job that waits delayed, unspent: BullMQ's `promote`, the worker's one way to wake
 * a job, whoever decided it may go. One not delayed yet is tried once more after {@link wakeRetryMs};
 * then it asks again when its own wait ends.
 */
import { Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { DeliveryJobData } from '@webhooks/shared';

/** How long after a missed wake-up a job is tried once more, in ms. */
export const wakeRetryMs = 200;

/** Wakes `jobIds` in `queueOf`'s queues (null: skipped); resolves once each is woken, gone or retried; never throws. */
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
