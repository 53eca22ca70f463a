/**
 * Load shedding: when the API process cannot keep up, publishing requests are answered 503 with
 * `Retry-After` at once, before any work is done for them (no token check, no body parsed, no
 * Redis call), instead of queueing inside the process until clients time out and retry, which
 * feeds the spike. Saturation is measured by @fastify/under-pressure: the event loop's delay and
 * its utilization, sampled every {@link sampleIntervalMs}. Only routes whose config sets
 * `shedUnderPressure` are shed (publishing an event, a test event): health and readiness answer,
 * and the subscription API stays usable for a platform's dashboard during a publish spike.
 * Every shed request is counted (`webhook_api_shed_requests_total`, by the measure that tripped).
 */
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import underPressure from '@fastify/under-pressure';
import { Counter } from 'prom-client';
import { HttpProblem } from '../lib/problem.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on routes answered 503 while the process is saturated (publishing). */
    shedUnderPressure?: boolean;
  }
}

/** How often saturation is measured, in ms. */
export const sampleIntervalMs = 100;
/** The `Retry-After` of a shed request, in seconds. */
export const shedRetryAfterSeconds = 1;

/** Options: the thresholds (API_SHED_EVENT_LOOP_DELAY_MS, API_SHED_EVENT_LOOP_UTILIZATION). */
export interface LoadSheddingOptions {
  /** Event loop delay past which requests are shed, in ms; 0: not measured. */
  maxEventLoopDelayMs: number;
  /** Event loop utilization (0 to 1) past which requests are shed; 0: not measured. */
  maxEventLoopUtilization: number;
}

const loadShedding: FastifyPluginAsync<LoadSheddingOptions> = async (app, options) => {
  const shed = new Counter({
    name: 'webhook_api_shed_requests_total',
    help: 'Requests answered 503 at once because the API process was saturated, by the measure that tripped (eventLoopDelay, eventLoopUtilization)',
    labelNames: ['measure'],
    registers: [app.metrics],
  });
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    maxEventLoopUtilization: options.maxEventLoopUtilization,
    sampleInterval: sampleIntervalMs,
    // Over the last interval, not since the process started: a spike must show at once.
    eventLoopUtilizationMode: 'interval',
    // Returning nothing lets the request through: only the routes that ask are shed. A rejected
    // promise ends the request through the error handler, as problem details.
    pressureHandler: (request, _reply, type) => {
      if (request.routeOptions.config.shedUnderPressure !== true) return;
      shed.inc({ measure: type });
      return Promise.reject(
        new HttpProblem(
          503,
          'overloaded',
          'The service is saturated and answers this request later; nothing was accepted. Retry after Retry-After seconds with the same idempotency_key.',
          undefined,
          { 'retry-after': String(shedRetryAfterSeconds) },
        ),
      );
    },
  });
};

export default fp(loadShedding, { name: 'load-shedding', dependencies: ['metrics'] });
