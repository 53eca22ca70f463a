/** `GET /api/event-types`: the event catalogue, with the endpoint that subscribes to each kind. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { eventCatalogue, EventCatalogueResponse, eventKinds } from '@webhooks/shared';
import { problemResponses } from '../lib/route-schemas.js';

const body: EventCatalogueResponse = {
  kinds: eventKinds.map((kind) => ({
    kind,
    description: eventCatalogue[kind].description,
    subscribe_uri: `/api/webhooks/${kind}`,
    types: [...eventCatalogue[kind].types],
  })),
};

const eventTypes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/event-types',
    {
      schema: {
        tags: ['events'],
        operationId: 'listEventTypes',
        summary: 'The event catalogue',
        response: { 200: EventCatalogueResponse, ...problemResponses },
      },
    },
    async () => body,
  );
};

export default eventTypes;
