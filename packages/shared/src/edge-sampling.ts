/**
 * Head sampling decided at the API's edge, from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
 * (the OpenTelemetry SDK environment specification). The SDK's sampler decides only when a span
 * starts, after every instrumentation did its work; a request decided against at the edge runs
 * with tracing suppressed instead. No OpenTelemetry import: the hook (`edge-sampling-hook.ts`)
 * draws by this rule and the SDK's sampler (`edge-sampler.ts`) takes the draw.
 */

/**
 * How traces are sampled: `ratio` of the roots, 0 to 1; `parentBased`, a span with a parent
 * follows its parent's decision (the `parentbased_*` samplers) instead of drawing its own.
 */
export interface EdgeSampling {
  ratio: number;
  parentBased: boolean;
}

/** The SDK's ratio when OTEL_TRACES_SAMPLER_ARG is absent or out of [0, 1]: every trace. */
const defaultRatio = 1;

/**
 * The edge rule the environment asks for, or undefined when every root is sampled anyway
 * (`always_on`, `parentbased_always_on`, the default, or a sampler name the SDK does not know and
 * replaces by its default): then there is nothing to decide at the edge.
 *
 * `traceidratio` and `parentbased_traceidratio` sample OTEL_TRACES_SAMPLER_ARG of the roots;
 * `always_off` and `parentbased_always_off` none.
 */
export function edgeSamplingOf(env: Record<string, string | undefined>): EdgeSampling | undefined {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim();
  const parentBased = sampler?.startsWith('parentbased_') === true;
  switch (sampler) {
    case 'always_off':
    case 'parentbased_always_off':
      return { ratio: 0, parentBased };
    case 'traceidratio':
    case 'parentbased_traceidratio': {
      const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
      const parsed = arg === undefined || arg === '' ? Number.NaN : Number(arg);
      const ratio = parsed >= 0 && parsed <= 1 ? parsed : defaultRatio;
      return ratio < 1 ? { ratio, parentBased } : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Whether a request that carries no valid W3C `traceparent` starts a trace here.
 *
 * @param random a number in [0, 1) (Math.random)
 */
export function startsTrace(sampling: EdgeSampling, random: number): boolean {
  return random < sampling.ratio;
}
