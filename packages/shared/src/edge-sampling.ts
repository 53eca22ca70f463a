/**
 * Head sampling decided at the API's edge from OTEL_TRACES_SAMPLER(_ARG): the SDK's sampler decides
 * only after instrumentations ran, so a request decided against runs with tracing suppressed. The
 * hook draws by this rule, the SDK's sampler (`edge-sampler.ts`) takes the draw.
 */

/** `ratio` of roots sampled (0–1); `parentBased`: a child follows its parent (`parentbased_*`). */
export interface EdgeSampling {
  ratio: number;
  parentBased: boolean;
}

/** The SDK's ratio when OTEL_TRACES_SAMPLER_ARG is absent or out of [0, 1]: every trace. */
const defaultRatio = 1;

/**
 * The edge rule asked for, or undefined when every root is sampled anyway (`always_on`, the
 * default, an unknown name). `…traceidratio` samples the ARG's share of roots, `…always_off` none.
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

/** Whether a request without a valid W3C `traceparent` starts a trace; `random` in [0, 1). */
export function startsTrace(sampling: EdgeSampling, random: number): boolean {
  return random < sampling.ratio;
}
