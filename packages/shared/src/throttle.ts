/**
 * A subscription's in-flight allowance: TCP's congestion window (RFC 5681 §3.1), real-valued between
 * 1 and the ceiling, starting at the base; its integer part is the limit. One change per window
 * (compare-and-set). A timeout or failed connection halves it; above the base, a slowing attempt or
 * another failure halves it down to the base; successes double it below the slow-start threshold, else add 1.
 */

/** What an attempt says about its callback's capacity. */
export type CongestionSignal = 'increase' | 'decrease' | 'hold';

/** Whether a subscription is held below its in-flight maximum, as shown on the subscription. */
export type ThrottleState = 'healthy' | 'throttled';

/** The signal of one attempt's result: confirmed (`errorClass` null: a 200, a broker's ack) raises. */
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

/** The in-flight limits: from `base` (SUBSCRIPTION_MAX_IN_FLIGHT) up to `ceiling` (…_CEILING, ≥ `base`). */
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

/** Whether a slot held `heldMs` is slowing: over 2× `averageMs` (null unknown) and {@link slowingMarginMs} past. */
export function isSlowing(heldMs: number, averageMs: number | null): boolean {
  return averageMs !== null && heldMs > 2 * averageMs && heldMs - averageMs > slowingMarginMs;
}

/**
 * The allowance after one attempt's signal.
 * @param allowance what the attempt was admitted under, between 1 and `bounds.ceiling`
 * @param slowing {@link isSlowing} of the attempt
 * @param threshold the slow-start threshold ({@link nextThreshold}): below it, successes double the allowance
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

/** Longest average slot time (ms) that may double an allowance: a slower callback earns one a window. */
export const slowStartSlotMs = 250;

/** The slow-start threshold applied: `threshold` while `averageMs` ≤ {@link slowStartSlotMs}, else 0. */
export function slowStartThreshold(threshold: number, averageMs: number | null): number {
  return averageMs !== null && averageMs <= slowStartSlotMs ? threshold : 0;
}

/**
 * The slow-start threshold after a move from `allowance` to `next`: after a fall on a failed attempt,
 * where it fell to (≥ base), as TCP sets `ssthresh` (RFC 5681 §3.1); a fall on latency
 * alone may be the worker's own pause and leaves it unchanged.
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

/** The average slot time (ms) after one more attempt of `durationMs`; `average` null at first. */
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

/** One turn of the slots (ms): the average, or the oldest slot's age past 4× it (a hang); null unknown. */
export function turnMs(view: Pick<ParkingView, 'averageMs' | 'oldestHeldMs'>): number | null {
  const { averageMs, oldestHeldMs } = view;
  return averageMs !== null && oldestHeldMs > 4 * averageMs ? oldestHeldMs : averageMs;
}

/**
 * How long a delivery over its limit waits before asking again (ms): `(parked + 1) / limit` turns of
 * {@link turnMs}, within [{@link minParkMs}, `maxMs`], ±10%, and never past the oldest lease's end
 * plus those turns (a lease that ends on its own wakes nobody).
 * @param random a number in [0, 1)
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

/** Whether `before` → `after` drops the limit below `max` from `max` (`webhook_subscriptions_throttled_total`). */
export function entersThrottling(before: number, after: number, max: number): boolean {
  return throttleState(before, max) === 'healthy' && throttleState(after, max) === 'throttled';
}
