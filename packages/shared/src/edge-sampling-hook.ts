/**
 * The API's edge decision ({@link EdgeSampling}), as a Fastify `onRequest` hook registered before
 * `@fastify/otel`'s, so that the request span starts in the context it leaves (which the rest of
 * the request, its body read and its handler, runs in too):
 *
 * - a request carrying a valid W3C `traceparent` (W3C Trace Context, "traceparent Header") goes
 *   the SDK's way: under a `parentbased_*` sampler it follows its caller;
 * - a request without one starts a trace with probability `ratio` (its server span is then
 *   recorded: `edge-sampler.ts`); one that does not runs with tracing suppressed, so every
 *   instrumentation skips it instead of doing its work for spans that record nothing, and
 *   `@fastify/otel` leaves it alone ({@link EdgeSamplingHooks.ignores}). The jobs it
 *   adds carry no trace context, and the worker samples their work as roots of its own, at the
 *   same ratio.
 */
import { context, isSpanContextValid } from '@opentelemetry/api';
import { isTracingSuppressed, parseTraceParent, suppressTracing } from '@opentelemetry/core';
import { startsTrace, type EdgeSampling } from './edge-sampling.js';

/** What the hook reads of a request: its headers, as Node gives them. */
export interface EdgeRequest {
  headers: Record<string, string | string[] | undefined>;
}

/** Whether `request` carries trace context the SDK will follow: a valid `traceparent`. */
export function carriesTraceContext(request: EdgeRequest): boolean {
  const header = request.headers.traceparent;
  const parent = typeof header === 'string' ? parseTraceParent(header) : null;
  return parent !== null && isSpanContextValid(parent);
}

/** The API's side of edge sampling: a Fastify hook, and `@fastify/otel`'s `ignorePaths`. */
export interface EdgeSamplingHooks {
  /** `onRequest`, before `@fastify/otel`'s: draws, and runs a request not drawn suppressed. */
  onRequest(request: EdgeRequest, reply: unknown, done: () => void): void;
  /**
   * `@fastify/otel`'s `ignorePaths` (called at each route's registration and twice a request):
   * true while tracing is suppressed, so that for a request not drawn it makes neither the request
   * span nor the handler span, not even ones that record nothing, nor runs them in a context.
   */
  ignores(): boolean;
}

/** The hooks for `sampling`; `random` draws in [0, 1) (Math.random). */
export function edgeSamplingHooks(
  sampling: EdgeSampling,
  random: () => number = Math.random,
): EdgeSamplingHooks {
  return {
    onRequest(request, _reply, done) {
      if (carriesTraceContext(request) || startsTrace(sampling, random())) {
        done();
        return;
      }
      context.with(suppressTracing(context.active()), done);
    },
    ignores: () => isTracingSuppressed(context.active()),
  };
}

/** Runs `work` with tracing suppressed: nothing it starts makes a span (the API's own warm-up). */
export function untraced<T>(work: () => T): T {
  return context.with(suppressTracing(context.active()), work);
}
