/**
 * OpenTelemetry tracing, switched on by the standard `OTEL_*` variables and costing nothing when
 * they are absent: BullMQ gets its telemetry (bullmq-otel), which carries the W3C trace context in
 * each job, only when traces are asked for. The SDK itself starts in `instrument.ts`, loaded before
 * the service with `node --import`.
 */
import { propagation, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { BullMQOtel } from 'bullmq-otel';

export { tracingRequested } from './tracing-env.js';

/**
 * BullMQ's `telemetry` option for a Queue or Worker: spans named after `tracerName` (the service)
 * and the trace context in every job; undefined when tracing is off, so BullMQ does no such work.
 */
export function queueTelemetry(enabled: boolean, tracerName: string): BullMQOtel | undefined {
  return enabled ? new BullMQOtel({ tracerName }) : undefined;
}

/**
 * Runs `work` in a span `name` of kind `kind`, child of the active context, with `attributes`;
 * the span ends with `work`, marked as an error when it throws. Without a registered SDK the
 * OpenTelemetry API makes this a no-op span.
 */
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
 * `ctx`'s trace context in the form BullMQ carries it in a job (`opts.telemetry.metadata`: the
 * JSON of a W3C `traceparent` carrier, as bullmq-otel writes it), or undefined when it carries
 * none (tracing off, or no span). A job given it joins that trace whatever context adds it.
 */
export function traceMetadata(ctx: Context): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return Object.keys(carrier).length === 0 ? undefined : JSON.stringify(carrier);
}

/**
 * `url` cut to scheme, host and path, for a span: a callback URL's query, user info and fragment
 * may hold the client's tokens, which do not belong in a trace backend.
 */
export function urlForSpan(url: URL): string {
  const { protocol, host, pathname } = url;
  return `${protocol}//${host}${pathname}`;
}
