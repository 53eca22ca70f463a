/**
 * Sampling at the API's edge: the rule read from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as
 * the SDK reads them, the hook that draws for a request (run as Fastify runs it) and the sampler
 * that takes the draw (asked as the SDK asks it); and the worker's counterpart, which runs a job
 * whose span records nothing with tracing suppressed.
 */
import { describe, expect, it } from '@jest/globals';
import { context, ROOT_CONTEXT, SamplingDecision, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { AlwaysOffSampler, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { isTracingSuppressed } from '@opentelemetry/core';
import { edgeSamplingOf, startsTrace } from '../src/edge-sampling.js';
import { edgeSampler } from '../src/edge-sampler.js';
import { carriesTraceContext, edgeSamplingHooks } from '../src/edge-sampling-hook.js';
import { suppressedUnlessRecording } from '../src/unsampled-work.js';

// context.with needs a context manager to carry the context into the callback: the SDK's.
new NodeTracerProvider().register();

describe('the edge rule', () => {
  it('is asked for only when a ratio of the roots, or none, is sampled', () => {
    expect(edgeSamplingOf({})).toBeUndefined();
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' })).toBeUndefined();
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined();
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toBeUndefined();
    expect(
      edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }),
    ).toEqual({
      ratio: 0.01,
      parentBased: true,
    });
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: ' 0.5 ' })).toEqual(
      {
        ratio: 0.5,
        parentBased: false,
      },
    );
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).toEqual({
      ratio: 0,
      parentBased: true,
    });
  });

  it('takes a missing or out-of-range ratio as the SDK does: every trace', () => {
    expect(edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' })).toBeUndefined();
    expect(
      edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }),
    ).toBeUndefined();
    expect(
      edgeSamplingOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }),
    ).toBeUndefined();
  });

  it('starts a trace for the given share of the draws', () => {
    expect(startsTrace({ ratio: 0.01, parentBased: true }, 0.009)).toBe(true);
    expect(startsTrace({ ratio: 0.01, parentBased: true }, 0.01)).toBe(false);
    expect(startsTrace({ ratio: 0, parentBased: true }, 0)).toBe(false);
  });
});

const request = (headers: Record<string, string>) => ({ headers });
const sampledParent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
// A trace id the ratio sampler at 1% rejects: the XOR of its four 32-bit words is above 1% of 2³².
const unluckyTraceId = `ffffffff${'0'.repeat(24)}`;

/** Whether the hook ran the rest of the request with tracing suppressed. */
const suppresses = (hooks: ReturnType<typeof edgeSamplingHooks>, headers: Record<string, string>) => {
  let suppressed: boolean | undefined;
  hooks.onRequest(request(headers), undefined, () => {
    suppressed = isTracingSuppressed(context.active());
  });
  return suppressed;
};

describe('the edge hook', () => {
  const never = edgeSamplingHooks({ ratio: 0, parentBased: true });

  it("lets a request carrying its caller's trace context through, whatever the draw", () => {
    expect(carriesTraceContext(request({ traceparent: sampledParent }))).toBe(true);
    expect(suppresses(never, { traceparent: sampledParent })).toBe(false);
    expect(suppresses(never, { traceparent: sampledParent.replace(/01$/, '00') })).toBe(false);
  });

  it('draws for a request without one, or with a traceparent that is not valid', () => {
    expect(suppresses(never, {})).toBe(true);
    expect(suppresses(never, { traceparent: 'not-a-traceparent' })).toBe(true);
    expect(suppresses(never, { traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` })).toBe(true);
    const drawn = edgeSamplingHooks({ ratio: 0.01, parentBased: true }, () => 0.005);
    expect(suppresses(drawn, {})).toBe(false);
  });

  it('has @fastify/otel leave alone a request not drawn, and only that one', () => {
    let ignored: boolean | undefined;
    never.onRequest(request({}), undefined, () => {
      ignored = never.ignores();
    });
    expect(ignored).toBe(true);
    never.onRequest(request({ traceparent: sampledParent }), undefined, () => {
      ignored = never.ignores();
    });
    expect(ignored).toBe(false);
    // At a route's registration, outside any request.
    expect(never.ignores()).toBe(false);
  });
});

describe('the edge sampler', () => {
  const sampler = edgeSampler({ ratio: 0.01, parentBased: true });

  it('records the server span of a request the edge drew for, which has no parent', () => {
    const decision = (kind: SpanKind) =>
      sampler.shouldSample(ROOT_CONTEXT, unluckyTraceId, 'x', kind, {}, []);
    expect(decision(SpanKind.SERVER).decision).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    // Any other root is the environment's sampler's to decide.
    expect(decision(SpanKind.CONSUMER).decision).toBe(SamplingDecision.NOT_RECORD);
  });

  it("follows the parent's decision under a parent-based sampler", () => {
    const parent = (traceFlags: TraceFlags) =>
      trace.setSpanContext(ROOT_CONTEXT, {
        traceId: unluckyTraceId,
        spanId: 'b7ad6b7169203331',
        traceFlags,
        isRemote: true,
      });
    const decision = (traceFlags: TraceFlags) =>
      sampler.shouldSample(parent(traceFlags), unluckyTraceId, 'x', SpanKind.SERVER, {}, []).decision;
    expect(decision(TraceFlags.SAMPLED)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decision(TraceFlags.NONE)).toBe(SamplingDecision.NOT_RECORD);
  });
});

describe("a worker's job", () => {
  const tracer = new NodeTracerProvider({ sampler: new AlwaysOffSampler() }).getTracer('unsampled');
  const sampledTracer = new NodeTracerProvider().getTracer('sampled');
  const suppressedInside = suppressedUnlessRecording(async () => isTracingSuppressed(context.active()));

  it('runs with tracing suppressed when its span records nothing', async () => {
    const span = tracer.startSpan('process');
    expect(await context.with(trace.setSpan(context.active(), span), suppressedInside)).toBe(true);
  });

  it('runs as it is under a recording span, or with no span at all', async () => {
    const span = sampledTracer.startSpan('process');
    expect(await context.with(trace.setSpan(context.active(), span), suppressedInside)).toBe(false);
    span.end();
    expect(await suppressedInside()).toBe(false);
  });
});
