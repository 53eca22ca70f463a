/**
 * Whether a delivery over its subscription's limit waits for a slot in the process, holding its BullMQ
 * slot, rather than being parked (two round trips, and the back of the queue). The bounds keep a slow
 * subscription from holding many slots; one that began to hang has a long turn and is parked at once.
 */

/** The bounds of waiting in place. */
export interface InSlotWaitRule {
  /** Longest total wait in place of one delivery, in ms. */
  maxMs: number;
  /** Most deliveries of one worker process waiting in place at once. */
  maxWaiting: number;
}

/** The worker's rule: 50 ms in all, by at most half of `concurrency` (≥ 1), so half the slots take new jobs. */
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
