/**
 * A subscription's endpoint health (`GET /api/webhooks/{id}/health`): its state, the last 24 hours'
 * success rate, failures in a row, its circuit breaker, and a uPlot chart of the 24 hours by hour
 * (attempts confirmed and failed as bars, the attempts' p95 duration in ms as a line).
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { paths, Subscription, WebhookClient } from '@webhooks/client';
import { useLoaded } from './api-call.js';
import { Badge, Time } from './parts.js';

/** The hourly series `GET /api/webhooks/{id}/health` answers. */
type Hourly =
  paths['/api/webhooks/{id}/health']['get']['responses'][200]['content']['application/json']['hourly'];

/** uPlot's columns of `hourly`: hours (s since the epoch), confirmed, failed, p95 (ms, null without attempts). */
export function chartColumns(hourly: Hourly): uPlot.AlignedData {
  return [
    hourly.map((h) => Date.parse(h.hour) / 1000),
    hourly.map((h) => h.succeeded),
    hourly.map((h) => h.failed),
    hourly.map((h) => h.latency_ms?.p95 ?? null),
  ];
}

function HourlyChart({ hourly }: { hourly: Hourly }) {
  const target = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (target.current === null) return;
    // Confirmed and failed side by side in their hour.
    const bars = (align: -1 | 1) => uPlot.paths.bars!({ size: [0.35, 10], align });
    const noPoints = { show: false };
    const plot = new uPlot(
      {
        width: Math.min(720, target.current.clientWidth || 720),
        height: 220,
        // Half an hour each side, so that the first and last hours' bars are drawn whole.
        scales: { x: { range: (_plot, min, max) => [min - 1_800, max + 1_800] } },
        series: [
          {},
          {
            label: 'confirmed',
            stroke: '#1a7f37',
            fill: 'rgba(26,127,55,0.45)',
            paths: bars(-1),
            points: noPoints,
          },
          {
            label: 'failed',
            stroke: '#cf222e',
            fill: 'rgba(207,34,46,0.55)',
            paths: bars(1),
            points: noPoints,
          },
          { label: 'p95 ms', stroke: '#0969da', width: 2, scale: 'ms', spanGaps: true },
        ],
        axes: [{}, { label: 'attempts' }, { side: 1, scale: 'ms', label: 'ms', grid: { show: false } }],
      },
      chartColumns(hourly),
      target.current,
    );
    return () => plot.destroy();
  }, [hourly]);
  return (
    <div
      ref={target}
      class="health-chart"
      role="img"
      aria-label="Attempts and p95 latency by hour, last 24 hours"
    />
  );
}

/** The health of `subscription`, loaded when shown. */
export function HealthPanel({ client, subscription }: { client: WebhookClient; subscription: Subscription }) {
  const { id } = subscription;
  const [loaded] = useLoaded(
    () => client.GET('/api/webhooks/{id}/health', { params: { path: { id } } }),
    [client, id],
  );
  const { breaker } = subscription.delivery;
  return (
    <section class="panel" aria-labelledby="health-heading">
      <h3 id="health-heading">Endpoint health</h3>
      {loaded.state === 'ready' && (
        <>
          <p class="facts">
            <Badge status={loaded.data.state} />
            <span>
              {loaded.data.windows.last_24_hours.success_rate === null
                ? 'no attempt in 24 h'
                : `${Math.round(loaded.data.windows.last_24_hours.success_rate * 100)}% confirmed in 24 h`}
            </span>
            {loaded.data.consecutive_failures > 0 && (
              <span>{loaded.data.consecutive_failures} failed in a row</span>
            )}
            <span>
              breaker {breaker.state.replace('_', '-')}
              {breaker.retry_at !== null && (
                <>
                  , next try <Time iso={breaker.retry_at} />
                </>
              )}
            </span>
          </p>
          <HourlyChart hourly={loaded.data.hourly} />
        </>
      )}
    </section>
  );
}
