/**
 * Load shedding: when the API process cannot keep up, publishing requests are answered 503 with
 * `Retry-After` at once, before their body is parsed or Redis is asked, instead of queueing inside
 * the process until clients time out and retry, which feeds the spike. Saturation is measured by
 * @fastify/under-pressure: the event loop's delay and its utilization, sampled every
 * {@link sampleIntervalMs}. Only routes whose config sets `shedUnderPressure` are shed: publishing
 * an event or a test event, and the routes that run an account's code or work in bulk
 * (transformation and filter tests, recover), which count in the same demand. Health and
 * readiness answer, and the subscription API stays usable for a platform's dashboard during a
 * publish spike.
 *
 * Shedding is fair between accounts: the saturation is noted when the request arrives, and once
 * its token names the account ({@link shedOverShare}, after authentication), only an account at or
 * above an equal share of the recent publishes is refused (`lib/publish-demand.ts`), so a quiet
 * account's publish is accepted while a flood is shed. Every shed request is counted
 * (`webhook_api_shed_requests_total`, by the measure that tripped).
 */
import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import underPressure from '@fastify/under-pressure';
import { Counter } from 'prom-client';
import { HttpProblem } from '../lib/problem.js';
import { createPublishDemand } from '../lib/publish-demand.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on routes answered 503 while the process is saturated: publishing, and costly ones. */
    shedUnderPressure?: boolean;
  }
  interface FastifyRequest {
    /** The saturation measure that tripped when this request arrived, or null. */
    saturatedBy: string | null;
  }
  interface FastifyInstance {
    /**
     * The account scope's hook, after authentication: counts a shed-able request against its
     * account's recent demand, and answers 503 when the process was saturated at its arrival and
     * the account is at or above its fair share.
     */
    shedOverShare: onRequestAsyncHookHandler;
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
    // Returning nothing lets the request through: a shed-able one is only marked here, and
    // refused or not by its account's share once its token is checked.
    pressureHandler: (request, _reply, type) => {
      if (request.routeOptions.config.shedUnderPressure === true) request.saturatedBy = type;
    },
  });
  app.decorateRequest('saturatedBy', null);
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
