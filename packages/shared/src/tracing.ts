/**
 * OpenTelemetry tracing, on with the standard `OTEL_*` variables and free without them: BullMQ's
 * telemetry (bullmq-otel) carries the W3C context in each job only then. The SDK starts in `instrument.ts`.
 */
import { propagation, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { BullMQOtel } from 'bullmq-otel';

export { tracingRequested } from './tracing-env.js';

/** BullMQ's `telemetry` option (spans named after `tracerName`, context in every job); undefined when off. */
export function queueTelemetry(enabled: boolean, tracerName: string): BullMQOtel | undefined {
  return enabled ? new BullMQOtel({ tracerName }) : undefined;
}

/** Runs `work` in a child span `name` of `kind` with `attributes`, ended with it (errored if it throws). */
export async function inSpan<T>(
  tracerName: string,
  name: string,
  attributes: Record<string, string | number>,
  work: (setAttributes: (more: Record<string, string | number | null>) => void) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return trace.getTracer(tracerName).startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work((more) => {
        for (const [key, value] of Object.entries(more)) if (value !== null) span.setAttribute(key, value);
      });
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * `ctx`'s trace context as BullMQ carries it in a job (bullmq-otel's `traceparent` JSON), or
 * undefined; a job given it joins that trace.
 */
export function traceMetadata(ctx: Context): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return Object.keys(carrier).length === 0 ? undefined : JSON.stringify(carrier);
}

/** `url` cut to scheme, host and path for a span: query, user info and fragment may hold tokens. */
export function urlForSpan(url: URL): string {
  const { protocol, host, pathname } = url;
  return `${protocol}//${host}${pathname}`;
}
