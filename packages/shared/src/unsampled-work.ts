/**
 * The worker's edge: a job's processor runs in the span BullMQ's telemetry starts for it (a child
 * of its publisher's context, or a root the sampler drew for). When that span records nothing,
 * {@link suppressedUnlessRecording} runs the processor with tracing suppressed, so the pg, ioredis
 * and BullMQ instrumentations skip its work instead of making spans that record nothing, as the
 * API does for a request its edge did not draw (`edge-sampling-hook.ts`). Jobs the processor adds
 * then carry no trace context, and are sampled at the ratio as roots of their own.
 */
import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';

/**
 * `work`, run with tracing suppressed when the active span is not recording; as it is when there
 * is no active span (tracing off: no OpenTelemetry work at all) or the span records.
 */
export function suppressedUnlessRecording<A extends unknown[], R>(
  work: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) => {
    const span = trace.getActiveSpan();
    if (span === undefined || span.isRecording()) return work(...args);
    return context.with(suppressTracing(context.active()), () => work(...args));
  };
}
