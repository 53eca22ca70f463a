/**
 * How many attempts one subscription may have in flight: TCP's congestion window (RFC 5681 §3.1)
 * over a real-valued allowance between 1 and SUBSCRIPTION_IN_FLIGHT_CEILING, starting at
 * SUBSCRIPTION_MAX_IN_FLIGHT (the base); its integer part is the limit. The gate applies one change
 * per window (compare-and-set), so ten hanging attempts halve it once. A timeout or connection
 * failure halves it; above the base, a slowing attempt or an answer other than 200 halves it down
 * to the base; a window of successes doubles it below the slow-start threshold, else adds 1.
 */

/** What an attempt says about its callback's capacity. */
export type CongestionSignal = 'increase' | 'decrease' | 'hold';

/** Whether a subscription is held below its in-flight maximum, as shown on the subscription. */
export type ThrottleState = 'healthy' | 'throttled';

/**
 * The signal of one attempt's result (the worker's AttemptResult: `errorClass` null when confirmed,
 * by an HTTP 200 or a broker's acknowledgement, which has no status code).
 */
export function congestionSignal(result: {
  statusCode: number | null;
  errorClass: string | null;
}): CongestionSignal {
  if (result.errorClass === null) return 'increase';
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

/**
 * The in-flight limits a subscription moves between: it starts at `base` (SUBSCRIPTION_MAX_IN_FLIGHT)
 * and earns up to `ceiling` (SUBSCRIPTION_IN_FLIGHT_CEILING, at least `base`).
 */
export interface InFlightBounds {
  base: number;
  ceiling: number;
}

/** The in-flight limit of an allowance: its integer part, between 1 and `ceiling`. */
export function inFlightLimit(allowance: number, ceiling: number): number {
  return Math.max(1, Math.min(ceiling, Math.floor(allowance)));
}

/** Margin over the average, in ms, below which a fast callback's jitter is not read as slowing. */
export const slowingMarginMs = 100;

/**
 * Whether an attempt that held its slot `heldMs` says its callback is slowing: over twice the
 * average slot time (`averageMs`, null while unknown) and {@link slowingMarginMs} past it (ms).
 */
export function isSlowing(heldMs: number, averageMs: number | null): boolean {
  return averageMs !== null && heldMs > 2 * averageMs && heldMs - averageMs > slowingMarginMs;
}

/**
 * The allowance after one attempt's signal.
 *
 * @param allowance the allowance the attempt was admitted under, between 1 and `bounds.ceiling`
 * @param slowing {@link isSlowing} of the attempt
 * @param threshold the subscription's slow-start threshold ({@link nextThreshold}; the ceiling
 *   until its allowance first fell): below it, a window of successes doubles the allowance
 */
export function nextAllowance(
  allowance: number,
  signal: CongestionSignal,
  bounds: InFlightBounds,
  slowing = false,
  threshold = bounds.ceiling,
): number {
  if (signal === 'decrease') return Math.max(1, Math.floor(allowance / 2));
  const step = allowance + 1;
  if (allowance < bounds.base) return signal === 'increase' ? Math.min(bounds.base, step) : allowance;
  if (signal === 'increase' && !slowing) {
    const doubled = allowance < threshold ? Math.min(threshold, allowance * 2) : step;
    return Math.min(bounds.ceiling, Math.max(step, doubled));
  }
  return Math.max(bounds.base, allowance / 2);
}

/**
 * Longest average slot time, in ms, under which an allowance may double (slow start): a slower
 * callback earns one a window, so that it cannot take every worker slot within a few windows.
 */
export const slowStartSlotMs = 250;

/**
 * The slow-start threshold {@link nextAllowance} applies: the subscription's `threshold` while its
 * callback answers fast (average slot time `averageMs`, in ms, at most {@link slowStartSlotMs}),
 * else 0, so that it earns one a window.
 */
export function slowStartThreshold(threshold: number, averageMs: number | null): number {
  return averageMs !== null && averageMs <= slowStartSlotMs ? threshold : 0;
}

/**
 * The slow-start threshold after an attempt moved the allowance from `allowance` to `next`. After a
 * fall on a timeout or an answer other than 200, where it fell to (never below the base), as TCP
 * sets `ssthresh` on a loss (RFC 5681 §3.1); otherwise unchanged: a fall on latency alone may be
 * the worker's own pause, and must not leave the subscription climbing one a window.
 */
export function nextThreshold(
  allowance: number,
  next: number,
  threshold: number,
  bounds: InFlightBounds,
  signal: CongestionSignal,
  slowing: boolean,
): number {
  const latencyOnly = slowing && signal === 'increase';
  return next < allowance && !latencyOnly ? Math.max(bounds.base, Math.floor(next)) : threshold;
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

/** The slot time assumed while a subscription has none on record yet, in ms. */
const unknownSlotMs = 50;

/** What the gate knows of a subscription when it parks one of its deliveries. */
export interface ParkingView {
  /** Deliveries of the subscription parked ahead of this one. */
  parked: number;
  /** The subscription's in-flight limit (at least 1). */
  limit: number;
  /** The subscription's average slot time, in ms; null when nothing is known yet. */
  averageMs: number | null;
  /** How long the oldest slot in flight has been held, in ms. */
  oldestHeldMs: number;
  /** How long a slot's lease lasts, in ms: it frees itself then, released or not. */
  leaseMs: number;
}

/**
 * How long one turn of the in-flight slots takes, in ms: the average slot time, or, when the oldest
 * slot in flight has been held more than 4 times that (a callback that just began to hang), how
 * long it has been held; null when nothing is known yet.
 */
export function turnMs(view: Pick<ParkingView, 'averageMs' | 'oldestHeldMs'>): number | null {
  const { averageMs, oldestHeldMs } = view;
  return averageMs !== null && oldestHeldMs > 4 * averageMs ? oldestHeldMs : averageMs;
}

/**
 * How long a delivery over its subscription's in-flight limit waits before it asks again, in ms:
 * `(parked + 1) / limit` turns of {@link turnMs}, between {@link minParkMs} and `maxMs`, ±10%.
 * Never past the oldest slot's lease end plus those turns: a lease that ends on its own (its holder
 * died) wakes nobody.
 *
 * @param view what the gate answered when it refused the slot
 * @param maxMs the longest wait, in ms (the gate's `maxParkMs`)
 * @param random a number in [0, 1) (Math.random)
 */
export function parkDelayMs(view: ParkingView, maxMs: number, random: number): number {
  const turns = (view.parked + 1) / view.limit;
  const estimate = turns * (turnMs(view) ?? unknownSlotMs);
  const leaseEnds = Math.max(0, view.leaseMs - view.oldestHeldMs) + turns * (view.averageMs ?? unknownSlotMs);
  const wait = Math.min(estimate, leaseEnds);
  return Math.round(Math.min(maxMs, Math.max(minParkMs, wait)) * (0.9 + 0.2 * random));
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
