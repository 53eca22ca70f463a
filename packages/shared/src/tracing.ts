/**
 * OpenTelemetry tracing, switched on by the standard `OTEL_*` variables and costing nothing when
 * they are absent: BullMQ gets its telemetry (bullmq-otel), which carries the W3C trace context in
 * each job, only when traces are asked for. The SDK itself starts in `instrument.ts`, loaded before
 * the service with `node --import`.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
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
