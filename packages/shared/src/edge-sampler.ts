/**
 * The SDK's side of {@link EdgeSampling}: the sampler `instrument.ts` gives the OpenTelemetry SDK
 * when the environment samples a ratio of the traces. The API's edge hook
 * (`edge-sampling-hook.ts`) has drawn for a request without trace context before its server span
 * starts, and runs the requests it drew against with tracing suppressed, which the SDK answers
 * without asking a sampler; so a server span that reaches this sampler without a valid parent is
 * one the edge drew for, and is recorded. Every other span (children, a caller's trace context,
 * the worker's jobs) is decided by the sampler the environment names, built as the SDK builds it
 * from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
 */
import { isSpanContextValid, SamplingDecision, SpanKind, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';
import type { EdgeSampling } from './edge-sampling.js';

/** The sampler for NodeSDK's `sampler` option, from the environment's rule ({@link edgeSamplingOf}). */
export function edgeSampler(sampling: EdgeSampling): Sampler {
  const root = sampling.ratio === 0 ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(sampling.ratio);
  const configured: Sampler = sampling.parentBased ? new ParentBasedSampler({ root }) : root;
  const drawn: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };
  return {
    shouldSample(context, traceId, spanName, spanKind, attributes, links) {
      const parent = trace.getSpanContext(context);
      if (spanKind === SpanKind.SERVER && (parent === undefined || !isSpanContextValid(parent))) return drawn;
      return configured.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    },
    toString: () => `EdgeSampler{${configured.toString()}}`,
  };
}
