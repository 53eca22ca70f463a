/**
 * The custom headers of a subscription with their values (`GET /api/webhooks/{id}/headers`): the
 * one answer that shows them unmasked, to the subscription's owner, with `Cache-Control: no-store`.
 * They are set with the subscription (`headers` on create and update).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { CustomHeadersView, openCustomHeaders, type SecretBox } from '@webhooks/shared';
import { noStore } from '../lib/headers.js';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';

const customHeaders: FastifyPluginAsyncTypebox<{ secretBox: SecretBox }> = async (app, { secretBox }) => {
  app.get(
    '/api/webhooks/:id/headers',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'getCustomHeaders',
        summary: 'The custom headers sent with every delivery, with their values',
        params: SubscriptionParams,
        response: { 200: CustomHeadersView, ...problemResponses },
      },
    },
    async (request, reply) => {
      const row = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      return reply.headers(noStore).send({ headers: openCustomHeaders(row.headers, row.id, secretBox) });
    },
  );
};

export default fp(customHeaders, { name: 'custom-headers-routes', encapsulate: true });
