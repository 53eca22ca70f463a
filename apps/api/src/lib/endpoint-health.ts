/** Endpoint health from recent attempts: pure rules of `GET /api/webhooks/{id}/health` (states as Svix's). */

/** The attempts of one window, as PostgreSQL aggregates them. */
export interface AttemptWindow {
  attempts: number;
  /** Attempts confirmed: by an HTTP 200, or by a broker destination's acknowledgement. */
  succeeded: number;
  /** Median and 95th percentile of the attempts' durations, in ms; null without attempts. */
  p50Ms: number | null;
  p95Ms: number | null;
}

/** What the state is decided from. */
export interface HealthFigures {
  /** The last 15 minutes. */
  recent: AttemptWindow;
  /** The last 24 hours. */
  day: AttemptWindow;
  /** Attempts since the last confirmed one, within the day. */
  consecutiveFailures: number;
}

/** `idle`: no attempt in 24 hours; `healthy`; `degraded`: some fail; `failing`: most fail, or a run does. */
export type HealthState = 'idle' | 'healthy' | 'degraded' | 'failing';

/** Failed attempts in a row that make an endpoint `failing`, whatever its rate. */
export const failingRun = 5;

/** Attempts in the recent window below which its success rate says nothing. */
export const minRateAttempts = 10;

/** The success rate of `window`, between 0 and 1; null without attempts. */
export function successRate(window: AttemptWindow): number | null {
  return window.attempts === 0 ? null : window.succeeded / window.attempts;
}

/**
 * The state: `failing` after {@link failingRun} failures in a row or under half of 15 minutes'
 * attempts confirmed; `degraded` under 95%, or a failed last attempt; `idle` with none in 24 hours;
 * else `healthy`. Rates count from {@link minRateAttempts} attempts on.
 */
export function healthState(figures: HealthFigures): HealthState {
  if (figures.day.attempts === 0) return 'idle';
  const rate = figures.recent.attempts >= minRateAttempts ? successRate(figures.recent) : null;
  if (figures.consecutiveFailures >= failingRun || (rate !== null && rate < 0.5)) return 'failing';
  if (figures.consecutiveFailures > 0 || (rate !== null && rate < 0.95)) return 'degraded';
  return 'healthy';
}

/** One hour of attempts, as PostgreSQL groups them (`date_trunc('hour', started_at)`). */
export interface HourRow {
  hour: Date;
  succeeded: number;
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** The hour a time falls in, in ms since the epoch (UTC hours). */
const hourMs = 3_600_000;

/** The last 24 hours by hour, oldest first, ending with `now`'s: each hour's row, or zero attempts. */
export function hourlySeries(rows: readonly HourRow[], now: Date): HourRow[] {
  const last = Math.floor(now.getTime() / hourMs) * hourMs;
  const byHour = new Map(rows.map((row) => [row.hour.getTime(), row]));
  return Array.from({ length: 24 }, (_, i) => {
    const hour = last - (23 - i) * hourMs;
    return byHour.get(hour) ?? { hour: new Date(hour), succeeded: 0, failed: 0, p50Ms: null, p95Ms: null };
  });
}
