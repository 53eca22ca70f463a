/**
 * The API's edge decision ({@link EdgeSampling}) as an `onRequest` hook registered before
 * `@fastify/otel`'s. A request with a valid W3C `traceparent` follows its caller; one without
 * starts a trace with probability `ratio`, and otherwise runs with tracing suppressed, so every
 * instrumentation skips it and `@fastify/otel` leaves it alone
 * ({@link EdgeSamplingHooks.ignores}). Its jobs carry no trace context.
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
