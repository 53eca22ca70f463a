/**
 * When the API sheds: by how long requests wait (event-loop delay, oldest shed-able request, oldest
 * event awaiting fan-out), not how busy it is. It starts past a bound, stops under half of all
 * (hysteresis); between samples, a bound on requests in flight stops a burst at once.
 */

/** The measure that started shedding: the metric's label and the log's reason. */
export type OverloadMeasure = 'eventLoopDelay' | 'requestWait' | 'fanOutWait' | 'inFlight';

/** Bounds in ms (API_SHED_EVENT_LOOP_DELAY_MS, …_MAX_WAIT_MS, …_MAX_FANOUT_WAIT_MS); 0 leaves one out. */
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

/** The shedding state after `sample` from `current` (null: not shedding): the measure now shedding, or null. */
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

/** 'inFlight' when an arrival with `inFlight` others reaches `maxInFlight` (API_SHED_MAX_IN_FLIGHT; 0: none). */
export function inFlightOverload(inFlight: number, maxInFlight: number): OverloadMeasure | null {
  return maxInFlight > 0 && inFlight >= maxInFlight ? 'inFlight' : null;
}
