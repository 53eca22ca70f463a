/**
 * A recovery's pace: an account's recover calls start at most RECOVER_ROUNDS_PER_MINUTE rounds, in
 * short windows sent evenly, leaving room for live deliveries and sparing a receiver just back
 * (Segment's replay guidance). An empty window is 429 with `Retry-After`; calls reserve first.
 */

/** The step due times are rounded down to (ms), so one blocking fetch wakes per 100 ms, not per round. */
const paceStepMs = 100;

/** One window of a recovery's pace: `rounds` (≥ 2) may start every `seconds` (≥ 1, whole). */
export interface PaceWindow {
  seconds: number;
  rounds: number;
}

/**
 * The window of `perMinute` rounds (≥ 1): one second, or the fewest seconds holding two rounds, with
 * its share rounded down, so a minute never starts more (10,000/min: 166 a second; 12/min: 2 per 10 s).
 */
export function paceWindow(perMinute: number): PaceWindow {
  const seconds = Math.max(1, Math.ceil(120 / perMinute));
  return { seconds, rounds: Math.floor((perMinute * seconds) / 60) };
}

/** A pace window as counted after spending a call's rounds. */
export interface RecoveryWindow {
  /** Rounds the window holds (> 0). */
  rounds: number;
  /** Its length, in ms. */
  lengthMs: number;
  /** Rounds counted in it, those of this call included. */
  consumed: number;
  /** Time left in it, in ms (the count's `msBeforeNext`). */
  msBeforeNext: number;
}

/**
 * The rounds a call of `wanted` may start: it holds the window's places from `countedAfter - wanted`
 * (its reservation counted), and only those under `rounds` are its; 0 when others took them.
 */
export function grantedRounds(rounds: number, countedAfter: number, wanted: number): number {
  return Math.max(0, Math.min(wanted, rounds - (countedAfter - wanted)));
}

/**
 * The wait (ms) of each of `count` rounds started now: the k-th of the window is due
 * `k × lengthMs / rounds` after it began, rounded down to {@link paceStepMs}; one past due waits 0.
 */
export function recoveryDelays(window: RecoveryWindow, count: number): number[] {
  const elapsedMs = window.lengthMs - window.msBeforeNext;
  const first = window.consumed - count;
  return Array.from({ length: count }, (_, i) => {
    const dueMs = Math.floor(((first + i) * window.lengthMs) / window.rounds / paceStepMs) * paceStepMs;
    return Math.max(0, dueMs - elapsedMs);
  });
}
