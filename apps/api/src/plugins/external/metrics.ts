/**
 * The API's Prometheus metrics (prom-client, its own registry): Node's defaults,
 * `webhook_http_request_duration_seconds{method, route, status_class}` (route patterns, never paths)
 * and other plugins' (`app.metrics`). `/metrics` on the operators' listener; 401 without METRICS_TOKEN.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type {} from '../../decorators.js';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { httpStatusClass, operatorTokenAccepted } from '@webhooks/shared';
import { HttpProblem } from '../../lib/problem.js';

export default fp(
  async (app) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const duration = new Histogram({
      name: 'webhook_http_request_duration_seconds',
      help: 'API requests from arrival to the last byte of the answer, in seconds, by route pattern',
      labelNames: ['method', 'route', 'status_class'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    app.decorate('metrics', registry);
    app.addHook('onResponse', async (request, reply) => {
      duration.observe(
        {
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status_class: httpStatusClass(reply.statusCode),
        },
        reply.elapsedTime / 1000,
      );
    });
  },
  { name: 'metrics' },
);

const metricsEndpoint: FastifyPluginAsync<{ registry: Registry; token: string }> = async (app, options) => {
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (options.token !== '' && !operatorTokenAccepted(request.headers.authorization, options.token)) {
      throw new HttpProblem(401, 'unauthorized', 'METRICS_TOKEN is required', undefined, {
        'www-authenticate': 'Bearer realm="metrics"',
      });
    }
    return reply.type(options.registry.contentType).send(await options.registry.metrics());
  });
};

/** `GET /metrics`: `registry` in Prometheus' text format, to METRICS_TOKEN's holder when set. */
export const metricsRoute = fp(metricsEndpoint, { name: 'metrics-route', encapsulate: true });
