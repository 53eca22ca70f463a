/**
 * `@fastify/otel`: a request and a handler span per request, not one per hook (a dozen, costly even
 * unsampled). Registered first, so its spans cover every route; an undrawn request is suppressed before.
 */
import { FastifyOtelInstrumentation } from '@fastify/otel';
import type { FastifyInstance } from 'fastify';
import { edgeSamplingHooks } from '@webhooks/shared/edge-sampling-hook';
import type { EdgeSampling } from '@webhooks/shared';

/** Instruments `app`; `edgeSampling` (`edgeSamplingFromEnv`), or undefined to trace every request. */
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
