/**
 * Adaptive concurrency of the `deliveries` worker. A worker process whose event loop is busy nearly
 * all the time (CPU-bound: fast callbacks under a backlog) gains nothing from more jobs in flight,
 * only latency: every job waits for the others' turns on the loop, so a quiet account's delivery
 * that starts behind a flood's hundred takes a hundred times the CPU it needs. Waiting on slow
 * callbacks leaves the loop idle, and then every slot is worth having. So the limit follows the
 * loop's utilization (Node's `performance.eventLoopUtilization`): multiplicative decrease while it
 * is above `highUtilization`, additive increase while it is below `lowUtilization`, between
 * WORKER_CONCURRENCY_MIN and WORKER_CONCURRENCY (the AIMD rule of TCP congestion control, RFC 5681
 * §3.1, applied to slots).
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** Bounds and thresholds of {@link nextConcurrency}. */
export interface ConcurrencyBounds {
  /** WORKER_CONCURRENCY_MIN: the least slots, kept whatever the loop's load. */
  min: number;
  /** WORKER_CONCURRENCY: the most slots. */
  max: number;
}

/** Above this share of time busy (0–1) the limit is cut. */
export const highUtilization = 0.85;
/** Below this share of time busy (0–1) the limit grows. */
export const lowUtilization = 0.7;
/** The cut's factor, and the slots added a step. */
const decrease = 0.75;
const increase = 2;

/**
 * The next limit from the current one and the event loop's utilization over the last interval
 * (0–1): × 0.75 above {@link highUtilization}, + 2 below {@link lowUtilization}, unchanged
 * between; always within `bounds`.
 */
export function nextConcurrency(current: number, utilization: number, bounds: ConcurrencyBounds): number {
  let next = current;
  if (utilization > highUtilization) next = Math.floor(current * decrease);
  else if (utilization < lowUtilization) next = current + increase;
  return Math.min(bounds.max, Math.max(bounds.min, next));
}

/** What {@link adaptConcurrency} adjusts: a BullMQ `Worker` (its `concurrency` is settable). */
export interface ConcurrencyTarget {
  concurrency: number;
}

/**
 * Sets `target.concurrency` by {@link nextConcurrency} every `intervalMs` ms from the loop's
 * utilization over that interval, calling `onChange` with each new limit; starts at `bounds.max`.
 * Does nothing when `bounds.min` equals `bounds.max`. Returns the stop.
 */
export function adaptConcurrency(
  target: ConcurrencyTarget,
  bounds: ConcurrencyBounds,
  intervalMs: number,
  onChange: (limit: number) => void,
): () => void {
  target.concurrency = bounds.max;
  onChange(bounds.max);
  if (bounds.min >= bounds.max) return () => {};
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    const next = nextConcurrency(target.concurrency, utilization, bounds);
    if (next === target.concurrency) return;
    target.concurrency = next;
    onChange(next);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
