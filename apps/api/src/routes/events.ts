/**
 * `POST /api/events`: publishes an event for the token's account, for services in other languages
 * and for a client's own testing. The same publisher and limits as internal services (issue #4):
 * 400 for an unknown type, 413 for `data` over 256 KiB; 202 with the event id and timestamp.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EventAccepted, EventCreate, formatPayloadTimestamp } from '@webhooks/shared';
import { publishProblem } from '../lib/publish-problem.js';
import { payloadTooLarge, problemResponse, problemResponses } from '../lib/route-schemas.js';

const events: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/api/events',
    {
      config: { portalRefused: true },
      schema: {
        tags: ['events'],
        operationId: 'publishEvent',
        summary: 'Publish an event to the subscriptions of your account',
        body: EventCreate,
        response: {
          202: EventAccepted,
          403: problemResponse('Portal session tokens cannot publish events'),
          413: payloadTooLarge,
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const { type, data, occurred_at, idempotency_key } = request.body;
      let published;
      try {
        published = await app.publisher.publish({
          accountId: request.accountId,
          type,
          data,
          occurredAt: occurred_at,
          idempotencyKey: idempotency_key,
          requestId: request.id,
        });
      } catch (error) {
        throw publishProblem(error, request.log);
      }
      let timestamp = published.timestamp;
      if (timestamp === null) {
        // A duplicate whose first event has left the queue: its stored row has the timestamp.
        const first = await app.prisma.event.findUnique({
          where: { id: published.id },
          select: { occurredAt: true },
        });
        timestamp = first ? formatPayloadTimestamp(first.occurredAt) : '';
      }
      return reply.code(202).send({ id: published.id, timestamp, duplicate: published.duplicate });
    },
  );
};

export default events;
