/**
 * `POST /api/webhooks/{id}/transformation-tests`: runs the transformation (or a candidate) on a sample
 * in the worker's sandbox and limits, answering what would be sent, a cancellation or the error.
 * Nothing is stored or sent; the sample meets a published event's limits; no thread in time is 503.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import {
  buildDeliveryPayload,
  checkEventData,
  formatPayloadTimestamp,
  openCustomHeaders,
  TransformationTestCreate,
  TransformationTestResult,
  type SecretBox,
  type TransformationRunner,
} from '@webhooks/shared';
import { publishProblem } from '../lib/publish-problem.js';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';
import { transformationBusyProblem, transformationProblem } from '../lib/transformation-check.js';

/** Options: the sandbox (null when TRANSFORMATIONS=false) and what opens stored headers. */
export interface TransformationTestsOptions {
  transformations: TransformationRunner | null;
  secretBox: SecretBox;
}

const transformationTests: FastifyPluginAsyncTypebox<TransformationTestsOptions> = async (
  app,
  { transformations, secretBox },
) => {
  app.post(
    '/api/webhooks/:id/transformation-tests',
    {
      config: { shedUnderPressure: true },
      schema: {
        tags: ['subscriptions'],
        operationId: 'testSubscriptionTransformation',
        summary: 'What the transformation makes of a sample payload',
        description:
          'Runs the subscription’s transformation, or the `transformation` sent, on `payload` as the worker would before sending it. Sends and stores nothing.',
        params: SubscriptionParams,
        body: TransformationTestCreate,
        response: { 200: TransformationTestResult, ...problemResponses },
      },
    },
    async (request) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const { payload, transformation: candidate } = request.body;
      try {
        checkEventData(payload.data, '/payload/data');
      } catch (error) {
        throw publishProblem(error, request.log);
      }
      if (transformations === null)
        throw transformationProblem('cannot run: transformations are turned off in this deployment');
      const source = candidate ?? subscription.transformation;
      if (source === null) throw transformationProblem('is not set on this subscription; send one to try');
      const result = await transformations.run(
        source,
        {
          payload: buildDeliveryPayload(
            {
              timestamp: payload.timestamp ?? formatPayloadTimestamp(new Date()),
              type: payload.type,
              data: payload.data,
            },
            { webhookId: payload.webhook_id ?? subscription.webhookId },
          ),
          headers: openCustomHeaders(subscription.headers, subscription.id, secretBox),
          url: subscription.callbackUrl,
          event_type: payload.type,
        },
        request.accountId,
      );
      if (result.kind === 'busy') throw transformationBusyProblem(result);
      if (result.kind === 'transformed')
        return { result: 'transformed', payload: result.payload, headers: result.headers, url: result.url };
      return result.kind === 'cancelled'
        ? { result: 'cancelled' }
        : { result: 'failed', error: result.error };
    },
  );
};

export default fp(transformationTests, { name: 'transformation-test-routes', encapsulate: true });
