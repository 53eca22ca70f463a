/**
 * The edge decision as an `onRequest` hook before `@fastify/otel`'s: a valid `traceparent` is
 * followed; otherwise a trace starts with probability `ratio`, else the request runs with tracing
 * suppressed and `@fastify/otel` ignores it. Its jobs carry no trace context.
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
  /** `@fastify/otel`'s `ignorePaths`: true while suppressed, so an undrawn request makes no span at all. */
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
