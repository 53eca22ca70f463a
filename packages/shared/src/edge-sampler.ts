/**
 * The SDK's side of {@link EdgeSampling}: the API's hook already drew for requests without context
 * and suppressed the rest, so a server span reaching this sampler without a valid parent is recorded;
 * every other span goes to the sampler OTEL_TRACES_SAMPLER(_ARG) names, built as the SDK builds it.
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
