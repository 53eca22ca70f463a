/**
 * OpenTelemetry's Fastify instrumentation (`@fastify/otel`): a request span and a handler span per
 * request, not a span per hook (a dozen a request, which cost even when a request is not sampled);
 * a hook's time shows as the request span's gap. Registered first, so that its spans cover every
 * route. With edge sampling, a request drawn against runs with tracing suppressed from before its
 * request span would start.
 */
import { FastifyOtelInstrumentation } from '@fastify/otel';
import type { FastifyInstance } from 'fastify';
import { edgeSamplingHooks } from '@webhooks/shared/edge-sampling-hook';
import type { EdgeSampling } from '@webhooks/shared';

/**
 * Instruments `app`.
 *
 * @param edgeSampling the sampler's settings (`edgeSamplingFromEnv`), or undefined to trace every request
 */
export async function registerTracing(
  app: FastifyInstance,
  edgeSampling: EdgeSampling | undefined,
): Promise<void> {
  const edge = edgeSampling === undefined ? undefined : edgeSamplingHooks(edgeSampling);
  if (edge !== undefined) app.addHook('onRequest', edge.onRequest);
  await app.register(
    new FastifyOtelInstrumentation({
      instrumentHooks: false,
      ...(edge === undefined ? {} : { ignorePaths: edge.ignores }),
    }).plugin(),
  );
}
