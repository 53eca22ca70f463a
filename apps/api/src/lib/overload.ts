/**
 * When the API sheds: by how long requests wait (the event loop's delay, the oldest shed-able
 * request in flight, the oldest event waiting for its fan-out), not by how busy it is. Shedding
 * starts when a wait passes its bound and stops when all are under half of it (hysteresis); between
 * samples, a bound on requests in flight stops a burst at once.
 */

/** The measure that started shedding: the metric's label and the log's reason. */
export type OverloadMeasure = 'eventLoopDelay' | 'requestWait' | 'fanOutWait' | 'inFlight';

/**
 * Bounds in ms (API_SHED_EVENT_LOOP_DELAY_MS, API_SHED_MAX_WAIT_MS, API_SHED_MAX_FANOUT_WAIT_MS);
 * 0 leaves a measure out.
 */
export interface OverloadBounds {
  maxEventLoopDelayMs: number;
  maxRequestWaitMs: number;
  maxFanOutWaitMs: number;
}

/** One sample, in ms. */
export interface OverloadSample {
  /** How late the sampling timer fired. */
  eventLoopDelayMs: number;
  /** Age of the oldest shed-able request in flight; 0 when there is none. */
  oldestRequestWaitMs: number;
  /** Age of the oldest event waiting for its fan-out; 0 when there is none. */
  fanOutWaitMs: number;
}

/** Share of a bound under which a wait must fall before shedding stops. */
export const releaseShare = 0.5;

/**
 * The shedding state after `sample`: the measure now shedding, or null.
 *
 * @param current the state before the sample (null: not shedding)
 */
export function nextOverload(
  current: OverloadMeasure | null,
  sample: OverloadSample,
  bounds: OverloadBounds,
): OverloadMeasure | null {
  const waits: [OverloadMeasure, number, number][] = [
    ['eventLoopDelay', sample.eventLoopDelayMs, bounds.maxEventLoopDelayMs],
    ['requestWait', sample.oldestRequestWaitMs, bounds.maxRequestWaitMs],
    ['fanOutWait', sample.fanOutWaitMs, bounds.maxFanOutWaitMs],
  ];
  const active = waits.filter(([, , bound]) => bound > 0);
  const over = active.find(([, wait, bound]) => wait > bound);
  if (over !== undefined) return over[0];
  if (current === null) return null;
  return active.some(([, wait, bound]) => wait > bound * releaseShare) ? current : null;
}

/**
 * Whether a shed-able request arriving while `inFlight` others are in flight is one too many:
 * 'inFlight' at or past `maxInFlight` (API_SHED_MAX_IN_FLIGHT; 0: no bound), else null. Checked at
 * each arrival, as a semaphore would be, not sampled.
 */
export function inFlightOverload(inFlight: number, maxInFlight: number): OverloadMeasure | null {
  return maxInFlight > 0 && inFlight >= maxInFlight ? 'inFlight' : null;
}
