/**
 * `POST /api/events`: publishes for the token's account through the internal services' publisher: 400
 * unknown type, 413 `data` over 256 KiB, 429 past the daily payload quota, 503 with `Retry-After` past
 * the backlog bound; 202 with id and timestamp. IDEMPOTENCY_STORE=postgresql claims the key there first.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { EventAccepted, EventCreate, formatPayloadTimestamp } from '@webhooks/shared';
import { v7 as uuidv7 } from 'uuid';
import { IdempotencyKeyHeader, idempotencyKeyOf } from '../lib/idempotency-key.js';
import type { IdempotencyStore } from '../lib/idempotency-store.js';
import { admitPublish, type PublishAdmission } from '../lib/publish-admission.js';
import { publishProblem } from '../lib/publish-problem.js';
import { payloadTooLarge, problemResponse, problemResponses } from '../lib/route-schemas.js';

/** Options of the publishing route: the backlog bound and payload quota it admits by, and more. */
export interface EventRoutesOptions extends PublishAdmission {
  /** Idempotency keys in PostgreSQL (IDEMPOTENCY_STORE=postgresql); null: in Redis only. */
  idempotency: IdempotencyStore | null;
}

const events: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (
  app,
  { backlog, quotas, idempotency },
) => {
  app.post(
    '/api/events',
    {
      config: { portalRefused: true, shedUnderPressure: true },
      schema: {
        tags: ['events'],
        operationId: 'publishEvent',
        summary: 'Publish an event to the subscriptions of your account',
        headers: IdempotencyKeyHeader,
        body: EventCreate,
        response: {
          202: EventAccepted,
          403: problemResponse('Portal session tokens cannot publish events'),
          413: payloadTooLarge,
          ...problemResponses,
          429: problemResponse(
            "The account's request rate limit, or its payload_bytes_per_day quota (type `/problems/quota-payload-bytes-per-day`), is reached; retry after `Retry-After` seconds",
          ),
          503: problemResponse(
            'PostgreSQL or Redis is unavailable, the service holds as much undelivered work as it accepts (type `/problems/backlog-full`), or it is saturated (type `/problems/overloaded`): nothing was accepted; retry after `Retry-After` seconds with the same idempotency_key',
          ),
        },
      },
    },
    async (request, reply) => {
      const { type, data, occurred_at } = request.body;
      const idempotency_key = idempotencyKeyOf(
        request.body.idempotency_key,
        request.headers['idempotency-key'],
      );
      await admitPublish({ backlog, quotas }, request.accountId, data, request.log);
      const id = uuidv7();
      const occurredAt = occurred_at === undefined ? new Date() : new Date(occurred_at);
      const claim =
        idempotency === null || idempotency_key === undefined
          ? null
          : await idempotency.claim(
              request.accountId,
              idempotency_key,
              id,
              formatPayloadTimestamp(occurredAt),
            );
      if (claim?.kind === 'duplicate')
        return reply.code(202).send({ id: claim.eventId, timestamp: claim.timestamp, duplicate: true });
      let published;
      try {
        published = await app.publisher.publish({
          id,
          accountId: request.accountId,
          type,
          data,
          occurredAt,
          idempotencyKey: idempotency_key,
          requestId: request.id,
        });
      } catch (error) {
        // Not queued: the client's retry with the same key must publish, not find a duplicate.
        if (claim !== null) await idempotency!.release(request.accountId, idempotency_key!, id);
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

export default fp(events, { name: 'event-routes', encapsulate: true });
