/**
 * The pace of a recovery. The rounds an account's recover calls start within one minute of its
 * RECOVER_ROUNDS_PER_MINUTE budget are sent evenly over that minute: the k-th round of the
 * minute's budget waits until k/budget of the minute has passed. A recovery of thousands then
 * leaves room for the account's live deliveries and for everyone else's, and does not knock over
 * a receiver that has just come back (Segment's replay guidance sizes a replay below the
 * destination's rate limit for the same reason, leaving a margin for real-time events). The
 * budget bounds the wait: no round waits more than two minutes.
 */

/**
 * The step the rounds' times are rounded down to, in ms: the rounds of each 100 ms of the minute
 * are due together. A job due every few ms wakes the workers' blocking fetch for each one: in the
 * bench's recover row, 10,000 rounds at the default pace cost the workers 63 s of CPU due one every
 * 6 ms and 42 s in steps of 100 ms, against 31-34 s for the same deliveries published live.
 */
const paceStepMs = 100;

/** One minute of the account's budget, as the per-minute count answered after spending `count`. */
export interface RecoveryWindow {
  /** RECOVER_ROUNDS_PER_MINUTE: rounds a minute (> 0). */
  budget: number;
  /** Rounds counted in this minute, those of this call included. */
  consumed: number;
  /** Time left in this minute, in ms (the count's `msBeforeNext`). */
  msBeforeNext: number;
}

/**
 * How long each of `count` rounds started now waits before it is sent, in ms, in the order they
 * were counted: this call's rounds are the last `count` of `window.consumed`, and the k-th round
 * of the minute (from 0) is due `k × 60,000 / budget` ms after the minute began, rounded down to
 * a step of {@link paceStepMs}. A round whose time has passed waits 0.
 */
export function recoveryDelays(window: RecoveryWindow, count: number): number[] {
  const minuteMs = 60_000;
  const elapsedMs = minuteMs - window.msBeforeNext;
  const first = window.consumed - count;
  return Array.from({ length: count }, (_, i) => {
    const dueMs = Math.floor(((first + i) * minuteMs) / window.budget / paceStepMs) * paceStepMs;
    return Math.max(0, dueMs - elapsedMs);
  });
}
