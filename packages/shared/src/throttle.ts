/**
 * How many attempts one subscription may have in flight: additive increase, multiplicative decrease, as TCP's congestion window
 * (RFC 5681 section 3.1). The allowance is a real number between 1 and SUBSCRIPTION_MAX_IN_FLIGHT;
 * its integer part is the in-flight limit.
 * - An attempt that timed out or could not connect halves it (never below 1). All attempts sent
 *   under one allowance count as one window: the gate applies a decrease only to the allowance the
 *   attempt was admitted under, so ten hanging attempts halve it once, not ten times.
 * - A confirmed attempt adds 1/limit, so a full window of successes adds 1.
 * - Any other answer (a 500, a 429) says nothing about capacity and leaves it alone: the retry
 *   schedule deals with those.
 * None of this touches attempts, backoff or auto-disable.
 */

/** What an attempt says about its callback's capacity. */
export type CongestionSignal = 'increase' | 'decrease' | 'hold';

/** Whether a subscription is held below its in-flight maximum, as shown on the subscription. */
export type ThrottleState = 'healthy' | 'throttled';

/** The signal of one attempt's result (the worker's AttemptResult: `errorClass` null when confirmed). */
export function congestionSignal(result: {
  statusCode: number | null;
  errorClass: string | null;
}): CongestionSignal {
  if (result.statusCode === 200 && result.errorClass === null) return 'increase';
  switch (result.errorClass) {
    case 'timeout':
    case 'connection_refused':
    case 'connection_reset':
    case 'dns':
      return 'decrease';
    default:
      return 'hold';
  }
}

/** The in-flight limit of an allowance: its integer part, between 1 and `max`. */
export function inFlightLimit(allowance: number, max: number): number {
  return Math.max(1, Math.min(max, Math.floor(allowance)));
}

/**
 * The allowance after one signal.
 *
 * @param allowance the allowance the attempt was admitted under (for a decrease) or the current
 *   one (for an increase), between 1 and `max`
 * @param max SUBSCRIPTION_MAX_IN_FLIGHT
 */
export function nextAllowance(allowance: number, signal: CongestionSignal, max: number): number {
  if (signal === 'decrease') return Math.max(1, Math.floor(allowance / 2));
  if (signal === 'increase') return Math.min(max, allowance + 1 / inFlightLimit(allowance, max));
  return allowance;
}

/** Weight of the newest sample in a subscription's average slot time (an EWMA). */
const durationWeight = 0.2;

/**
 * A subscription's average time an attempt holds its in-flight slot, in ms, after one more of
 * `durationMs`; `average` null at first.
 */
export function averageDurationMs(average: number | null, durationMs: number): number {
  return average === null ? durationMs : average + durationWeight * (durationMs - average);
}

/** Shortest wait of a parked delivery, in ms. */
export const minParkMs = 10;

/**
 * How long a delivery over its subscription's in-flight limit waits before asking again, in ms:
 * about the time the deliveries parked before it take to go through at the current limit
 * (`(parked + 1) / limit` slot times), between {@link minParkMs} and `maxMs`, spread by ±10% so
 * that they do not all return at once. Waiting costs no attempt.
 *
 * @param parked deliveries of the subscription waiting ahead of this one
 * @param averageMs how long an attempt holds its slot (the average, or longer when one in flight
 *   already did); null when nothing is known yet
 * @param random a number in [0, 1) (Math.random)
 */
export function parkDelayMs(
  parked: number,
  limit: number,
  averageMs: number | null,
  maxMs: number,
  random: number,
): number {
  const turn = ((parked + 1) / limit) * (averageMs ?? 50);
  return Math.round(Math.min(maxMs, Math.max(minParkMs, turn)) * (0.9 + 0.2 * random));
}

/** `throttled` while the limit is below `max`. */
export function throttleState(allowance: number, max: number): ThrottleState {
  return inFlightLimit(allowance, max) < max ? 'throttled' : 'healthy';
}

/**
 * Whether moving a subscription's allowance from `before` to `after` throttles it: its in-flight
 * limit drops below `max` from `max` (what `webhook_subscriptions_throttled_total` counts, once
 * per episode however far the allowance then falls).
 */
export function entersThrottling(before: number, after: number, max: number): boolean {
  return throttleState(before, max) === 'healthy' && throttleState(after, max) === 'throttled';
}
