/**
 * The Grafana dashboard and the Prometheus alert rules in deploy/ name only metrics the services
 * export: each `webhook_*` name they query is registered by the API or the worker.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { createWorkerMetrics } from '../apps/worker/src/metrics.js';
import { startTestApi, type TestApi } from './support/api.js';

const root = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

/** The metric names a PromQL expression uses, histogram series reduced to their metric. */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\bwebhook_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ''));

let api: TestApi;
let exported: Set<string>;
beforeAll(async () => {
  // With REDIS_WAIT_REPLICAS, the API exports the replica watch's metrics too.
  api = await startTestApi('dashboards', { REDIS_WAIT_REPLICAS: '1' });
  const names = async (registry: { getMetricsAsJSON(): Promise<Array<{ name: string }>> }) =>
    (await registry.getMetricsAsJSON()).map((metric) => metric.name);
  exported = new Set([...(await names(api.app.metrics)), ...(await names(createWorkerMetrics().registry))]);
});
afterAll(() => api.close());

describe('deploy/', () => {
  it('grafana/webhooks.json queries only exported metrics, and covers what an operator watches', () => {
    const dashboard = JSON.parse(read('deploy/grafana/webhooks.json')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const used = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap((target) => metricsIn(target.expr)),
    );
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
    for (const watched of [
      'webhook_deliveries_total',
      'webhook_delivery_latency_seconds',
      'webhook_queue_jobs',
      'webhook_subscriptions_throttled_total',
      'webhook_subscriptions',
    ])
      expect(used).toContain(watched);
  });

  it('prometheus/alerts.yml alerts only on exported metrics', () => {
    const rules = parse(read('deploy/prometheus/alerts.yml')) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
    };
    const used = rules.groups.flatMap((group) => group.rules.flatMap((rule) => metricsIn(rule.expr)));
    expect(used.length).toBeGreaterThan(5);
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
  });
});
