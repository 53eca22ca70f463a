/**
 * Whether a delivery over its subscription's in-flight limit waits for a slot in the worker
 * process, holding its BullMQ worker slot, rather than being parked in BullMQ's delayed set.
 * Parking costs two Redis round trips and sends the job to the back of the queue,
 * which turned the bursts a batched fan-out hands to 50 worker slots into a latency tail of
 * hundreds of ms at 200 events/s. A short wait in place avoids that;
 * its bounds keep the fairness promise that a slow subscription cannot hold many worker slots: a
 * subscription that began to hang has a long turn (`parkDelayMs`) and is parked at once.
 */

/** The bounds of waiting in place. */
export interface InSlotWaitRule {
  /** Longest total wait in place of one delivery, in ms. */
  maxMs: number;
  /** Most deliveries of one worker process waiting in place at once. */
  maxWaiting: number;
}

/**
 * The rule the worker uses: at most 50 ms in all, by at most half its concurrency (at least 1), so
 * that half its slots always take the next jobs whatever one subscription's burst.
 *
 * @param concurrency WORKER_CONCURRENCY
 */
export function inSlotWaitRule(concurrency: number): InSlotWaitRule {
  return { maxMs: 50, maxWaiting: Math.max(1, Math.floor(concurrency / 2)) };
}

/**
 * @param waitMs the wait the gate asked for, in ms
 * @param waitedMs how long this delivery has waited in place already, in ms
 * @param waitingNow deliveries of this process waiting in place now
 * @returns true to wait `waitMs` in place and ask again; false to park the delivery
 */
export function waitsInSlot(
  waitMs: number,
  waitedMs: number,
  waitingNow: number,
  rule: InSlotWaitRule,
): boolean {
  return waitingNow < rule.maxWaiting && waitedMs + waitMs <= rule.maxMs;
}
