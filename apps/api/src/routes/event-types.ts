/** `GET /api/event-types`: the event catalogue, with the endpoint that subscribes to each kind. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { EventCatalogueResponse } from '@webhooks/shared';
import { problemResponses } from '../lib/route-schemas.js';
import type { Views } from '../lib/views.js';

const eventTypes: FastifyPluginAsyncTypebox<{ views: Views }> = async (app, { views }) => {
  const body = views.catalogue();
  app.get(
    '/api/event-types',
    {
      schema: {
        tags: ['events'],
        operationId: 'listEventTypes',
        summary: 'The event catalogue, with example data of every type',
        response: { 200: EventCatalogueResponse, ...problemResponses },
      },
    },
    async () => body,
  );
};

export default fp(eventTypes, { name: 'event-type-routes', encapsulate: true });
