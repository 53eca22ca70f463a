/**
 * The worker's edge: a job whose BullMQ span records nothing runs with tracing suppressed
 * ({@link suppressedUnlessRecording}), so instrumentations skip it, as the API does for an undrawn
 * request. Jobs it adds carry no context and are sampled as roots.
 */
import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';

/** `work`, with tracing suppressed when the active span does not record (as is without one). */
export function suppressedUnlessRecording<A extends unknown[], R>(
  work: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) => {
    const span = trace.getActiveSpan();
    if (span === undefined || span.isRecording()) return work(...args);
    return context.with(suppressTracing(context.active()), () => work(...args));
  };
}
