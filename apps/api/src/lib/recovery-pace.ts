/**
 * The pace of a recovery: an account's recover calls start at most RECOVER_ROUNDS_PER_MINUTE rounds
 * a minute, in short windows ({@link paceWindow}) sent evenly, so a recovery of thousands leaves
 * room for live deliveries and spares a receiver just back (Segment's replay guidance). A window
 * with nothing left answers 429 with `Retry-After`. A call reserves its rounds before reading them,
 * so concurrent calls share a window ({@link grantedRounds}), and gives back what it did not start.
 */

/**
 * The step the rounds' times are rounded down to, in ms: the rounds of each 100 ms of a window are
 * due together, since a job due every few ms would wake the workers' blocking fetch for each one.
 */
const paceStepMs = 100;

/** One window of a recovery's pace: `rounds` (≥ 2) may start every `seconds` (≥ 1, whole). */
export interface PaceWindow {
  seconds: number;
  rounds: number;
}

/**
 * The pace window of a budget of `perMinute` rounds a minute (≥ 1): one second, or the fewest
 * whole seconds that hold two rounds when the budget is under 120 a minute; it holds the budget's
 * share of its length, rounded down, so the windows of a minute never start more than the budget.
 * E.g. 10,000 a minute: 166 a second; 12 a minute: 2 every 10 s.
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
 * The rounds a call that asked for `wanted` may start, once its reservation is counted: the
 * window's count after it is `countedAfter` (the calls reserved before it included), so the call
 * holds the window's places `countedAfter - wanted` onwards, and only those under `rounds` are
 * its. 0 when concurrent calls took the whole window first.
 */
export function grantedRounds(rounds: number, countedAfter: number, wanted: number): number {
  return Math.max(0, Math.min(wanted, rounds - (countedAfter - wanted)));
}

/**
 * How long each of `count` rounds started now waits before it is sent, in ms, in the order they
 * were counted: this call's rounds are the last `count` of `window.consumed`, and the k-th round
 * of the window (from 0) is due `k × lengthMs / rounds` ms after the window began, rounded down to
 * a step of {@link paceStepMs}. A round whose time has passed waits 0.
 */
export function recoveryDelays(window: RecoveryWindow, count: number): number[] {
  const elapsedMs = window.lengthMs - window.msBeforeNext;
  const first = window.consumed - count;
  return Array.from({ length: count }, (_, i) => {
    const dueMs = Math.floor(((first + i) * window.lengthMs) / window.rounds / paceStepMs) * paceStepMs;
    return Math.max(0, dueMs - elapsedMs);
  });
}
