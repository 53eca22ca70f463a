/**
 * Load shedding: while requests would wait past a bound (`lib/overload.ts`), `shedUnderPressure` routes
 * answer 503 with `Retry-After` before their body is parsed; after authentication, only accounts at or
 * above an equal share of recent demand are refused (`lib/publish-demand.ts`).
 */
import { performance } from 'node:perf_hooks';
import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { Counter } from 'prom-client';
import { HttpProblem } from '../../lib/problem.js';
import { createPublishDemand } from '../../lib/publish-demand.js';
import {
  inFlightOverload,
  nextOverload,
  type OverloadBounds,
  type OverloadMeasure,
} from '../../lib/overload.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on routes answered 503 while requests would wait too long: publishing, and costly ones. */
    shedUnderPressure?: boolean;
  }
  interface FastifyRequest {
    /** The measure that was shedding when this request arrived, or null. */
    saturatedBy: OverloadMeasure | null;
  }
  interface FastifyInstance {
    /** The account scope's hook: counts the request's demand, and 503 when shedding and at or above its share. */
    shedOverShare: onRequestAsyncHookHandler;
  }
}

/** How often the waits are measured, in ms. */
export const sampleIntervalMs = 100;
/** The `Retry-After` of a shed request, in seconds. */
export const shedRetryAfterSeconds = 1;

/** Options: the bounds, in ms, and where the fan-out's wait is read. */
export interface LoadSheddingOptions extends OverloadBounds {
  /** Shed-able requests one process holds at once (API_SHED_MAX_IN_FLIGHT); 0: no bound. */
  maxInFlight: number;
  /** Age of the oldest event waiting for its fan-out, in ms, as last sampled (`lib/backlog.ts`). */
  fanOutWaitMs(): number;
}

const loadShedding: FastifyPluginAsync<LoadSheddingOptions> = async (app, options) => {
  const shed = new Counter({
    name: 'webhook_api_shed_requests_total',
    help: 'Requests answered 503 at once because requests or events were waiting past a bound, by the measure (eventLoopDelay, requestWait, fanOutWait, inFlight)',
    labelNames: ['measure'],
    registers: [app.metrics],
  });
  let shedding: OverloadMeasure | null = null;
  // Shed-able requests in flight by id, in arrival order: the first is the oldest.
  const inFlight = new Map<string, number>();
  let lastSample = performance.now();
  // A timer, not each request: after a held loop it runs before sockets are read, so queued requests see the hold.
  const sampler = setInterval(() => {
    const now = performance.now();
    const oldest = inFlight.values().next();
    shedding = nextOverload(
      shedding,
      {
        eventLoopDelayMs: Math.max(0, now - lastSample - sampleIntervalMs),
        oldestRequestWaitMs: oldest.done === true ? 0 : now - oldest.value,
        fanOutWaitMs: options.fanOutWaitMs(),
      },
      options,
    );
    lastSample = now;
  }, sampleIntervalMs);
  sampler.unref();
  app.addHook('onClose', async () => clearInterval(sampler));

  app.decorateRequest('saturatedBy', null);
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.shedUnderPressure === true) {
      request.saturatedBy = shedding ?? inFlightOverload(inFlight.size, options.maxInFlight);
      const id = request.id;
      inFlight.set(id, performance.now());
      // 'close' follows every response, and a connection that ends without one: none is left in.
      reply.raw.once('close', () => inFlight.delete(id));
    }
    done();
  });

  const demand = createPublishDemand();
  const shedOverShare: onRequestAsyncHookHandler = async (request) => {
    if (request.routeOptions.config.shedUnderPressure !== true) return;
    const overShare = demand.record(request.accountId);
    if (request.saturatedBy === null || !overShare) return;
    shed.inc({ measure: request.saturatedBy });
    throw new HttpProblem(
      503,
      'overloaded',
      'The service is saturated and answers this request later; nothing was accepted. Retry after Retry-After seconds with the same idempotency_key.',
      undefined,
      { 'retry-after': String(shedRetryAfterSeconds) },
    );
  };
  app.decorate('shedOverShare', shedOverShare);
};

export default fp(loadShedding, { name: 'load-shedding', dependencies: ['metrics'] });
