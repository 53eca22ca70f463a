/**
 * `GET /api/webhooks/{id}/health`: how the endpoint answers lately, from the delivery log: the last 15
 * minutes and 24 hours (attempts, success rate, latency p50/p95), failures since the last confirmed
 * attempt, the last success and failure, a state (`lib/endpoint-health.ts`) and the 24 hours by hour.
 * It counts attempts of deliveries created up to {@link deliveryLookbackMs} before the window (every
 * automatic retry), so the log's days read stay bounded.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { firstIdAt, SubscriptionHealth } from '@webhooks/shared';
import { healthState, hourlySeries, successRate, type AttemptWindow } from '../lib/endpoint-health.js';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';
import { accountErrorClass, type Views } from '../lib/views.js';

/** The windows, in ms. */
const recentMs = 15 * 60 * 1000;
const dayMs = 24 * 60 * 60 * 1000;

/**
 * How long before the day window a delivery may have been created and still be attempted in it, in
 * ms: DELIVERY_MAX_AGE's default, past which a delivery is given up.
 */
export const deliveryLookbackMs = 3 * dayMs;

interface HealthRow {
  recent_attempts: bigint;
  recent_succeeded: bigint;
  recent_p50: number | null;
  recent_p95: number | null;
  day_attempts: bigint;
  day_succeeded: bigint;
  day_p50: number | null;
  day_p95: number | null;
  consecutive_failures: bigint;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_status: number | null;
  last_failure_error: string | null;
  /** The attempts by hour (`json_agg`, so times are strings). */
  hourly: Array<{ hour: string; succeeded: number; failed: number; p50: number | null; p95: number | null }>;
}

const health: FastifyPluginAsyncTypebox<{ views: Views }> = async (app, { views }) => {
  app.get(
    '/api/webhooks/:id/health',
    {
      // A day of attempts aggregated: costly, so shed under pressure as publishing is.
      config: { shedUnderPressure: true },
      schema: {
        tags: ['deliveries'],
        operationId: 'getSubscriptionHealth',
        summary: 'How the endpoint answers lately: success rate, latency, failures in a row, state',
        params: SubscriptionParams,
        response: { 200: SubscriptionHealth, ...problemResponses },
      },
    },
    async (request): Promise<SubscriptionHealth> => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const now = Date.now();
      const day = new Date(now - dayMs);
      const recent = new Date(now - recentMs);
      const [row] = await app.prisma.$queryRaw<HealthRow[]>`
        WITH attempts AS (
          SELECT a.started_at, a.duration_ms, a.status_code, a.error_class
          FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
          WHERE d.subscription_id = ${subscription.id}::uuid
            AND d.id >= ${firstIdAt(new Date(day.getTime() - deliveryLookbackMs))}::uuid
            AND a.delivery_id >= ${firstIdAt(new Date(day.getTime() - deliveryLookbackMs))}::uuid
            AND a.started_at >= ${day}
        ), success AS (
          SELECT max(started_at) AS at FROM attempts WHERE error_class IS NULL
        ), failure AS (
          SELECT started_at, status_code, error_class FROM attempts
          WHERE error_class IS NOT NULL ORDER BY started_at DESC LIMIT 1
        ), hours AS (
          SELECT date_trunc('hour', started_at, 'UTC') AS hour,
            count(*) FILTER (WHERE error_class IS NULL) AS succeeded,
            count(*) FILTER (WHERE error_class IS NOT NULL) AS failed,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95
          FROM attempts GROUP BY 1
        )
        SELECT
          count(*) FILTER (WHERE started_at >= ${recent}) AS recent_attempts,
          count(*) FILTER (WHERE started_at >= ${recent} AND error_class IS NULL) AS recent_succeeded,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE started_at >= ${recent}) AS recent_p50,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE started_at >= ${recent}) AS recent_p95,
          count(*) AS day_attempts,
          count(*) FILTER (WHERE error_class IS NULL) AS day_succeeded,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS day_p50,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS day_p95,
          count(*) FILTER (WHERE started_at > coalesce((SELECT at FROM success), '-infinity')) AS consecutive_failures,
          (SELECT at FROM success) AS last_success_at,
          (SELECT started_at FROM failure) AS last_failure_at,
          (SELECT status_code FROM failure) AS last_failure_status,
          (SELECT error_class FROM failure) AS last_failure_error,
          (SELECT coalesce(json_agg(hours), '[]') FROM hours) AS hourly
        FROM attempts`;
      const hourly = hourlySeries(
        row!.hourly.map((h) => ({
          hour: new Date(h.hour),
          succeeded: Number(h.succeeded),
          failed: Number(h.failed),
          p50Ms: h.p50,
          p95Ms: h.p95,
        })),
        new Date(now),
      );
      const windows = {
        recent: attemptWindow(row!.recent_attempts, row!.recent_succeeded, row!.recent_p50, row!.recent_p95),
        day: attemptWindow(row!.day_attempts, row!.day_succeeded, row!.day_p50, row!.day_p95),
      };
      const consecutiveFailures = Number(row!.consecutive_failures);
      return {
        subscription: { resource_uri: views.links.subscription(subscription.id) },
        state: healthState({ ...windows, consecutiveFailures }),
        consecutive_failures: consecutiveFailures,
        last_success_at: row!.last_success_at?.toISOString() ?? null,
        last_failure:
          row!.last_failure_at === null
            ? null
            : {
                at: row!.last_failure_at.toISOString(),
                status_code: row!.last_failure_status,
                error: accountErrorClass(row!.last_failure_error),
              },
        windows: {
          last_15_minutes: presentWindow(windows.recent, recent),
          last_24_hours: presentWindow(windows.day, day),
        },
        hourly: hourly.map((h) => ({
          hour: h.hour.toISOString(),
          succeeded: h.succeeded,
          failed: h.failed,
          latency_ms: h.p50Ms === null || h.p95Ms === null ? null : { p50: h.p50Ms, p95: h.p95Ms },
        })),
      };
    },
  );
};

function attemptWindow(
  attempts: bigint,
  succeeded: bigint,
  p50: number | null,
  p95: number | null,
): AttemptWindow {
  return { attempts: Number(attempts), succeeded: Number(succeeded), p50Ms: p50, p95Ms: p95 };
}

function presentWindow(window: AttemptWindow, since: Date) {
  return {
    since: since.toISOString(),
    attempts: window.attempts,
    succeeded: window.succeeded,
    success_rate: successRate(window),
    latency_ms:
      window.p50Ms === null || window.p95Ms === null ? null : { p50: window.p50Ms, p95: window.p95Ms },
  };
}

export default fp(health, { name: 'subscription-health', encapsulate: true });
