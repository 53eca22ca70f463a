/**
 * The events API. `GET /api/events`: newest first, filtered by `event_type`, `since` and `until`, paged
 * with `before`, all bounds on the UUIDv7 id so PostgreSQL reads only their days. `GET /api/events/{id}`:
 * the event and its deliveries. `DELETE /api/events/{id}/payload`: empties the data, cancels pending
 * deliveries, clears response bodies, drops the fan-out job (204, idempotent). An event no subscription received is a 404.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { validate as isUuid } from 'uuid';
import {
  EventDetail,
  EventListQuery,
  EventParams,
  EventSummary,
  firstIdAt,
  maxListedEventTypes,
  Page,
  timeIdRange,
  type Catalogue,
} from '@webhooks/shared';
import { pageRequest } from '../lib/pagination.js';
import { HttpProblem, notFound } from '../lib/problem.js';
import { problemResponse, problemResponses } from '../lib/route-schemas.js';
import type { RelayCopies } from '../lib/relay-copies.js';
import type { Views } from '../lib/views.js';

/** Most events counted for a list's `count`: past it the count says "at least this many". */
const eventCountWindow = 10_000;

/** Options of the events API's routes. */
export interface EventLogRoutesOptions {
  views: Views;
  catalogue: Catalogue;
  /** The `webhooks listen` sessions' copies of payloads, which an expunge clears. */
  relayCopies: RelayCopies;
}

/** A 400 naming query parameter `name`. */
const badQuery = (name: string, detail: string) =>
  new HttpProblem(400, 'validation', `${name} ${detail}`, [{ pointer: `/${name}`, detail }]);

/**
 * The event types asked for, comma-separated in `event_type` or its alias `type` (Stripe's); null: none.
 * @throws HttpProblem 400 naming the parameter for an unknown type or too many, `type` when both are given
 */
export function listedEventTypes(
  query: { event_type?: string | undefined; type?: string | undefined },
  catalogue: Pick<Catalogue, 'entry'>,
): string[] | null {
  if (query.event_type !== undefined && query.type !== undefined)
    throw badQuery('type', 'is the same filter as event_type: give one of the two');
  const name = query.type === undefined ? 'event_type' : 'type';
  const value = query.type ?? query.event_type;
  if (value === undefined) return null;
  const types = [...new Set(value.split(',').map((t) => t.trim()))];
  if (types.length > maxListedEventTypes)
    throw badQuery(name, `names more than ${maxListedEventTypes} types`);
  const unknown = types.find((t) => catalogue.entry(t) === undefined);
  if (unknown !== undefined)
    throw badQuery(name, `names ${JSON.stringify(unknown)}, which is not an event type of the catalogue`);
  return types;
}

/** The id bounds of a list query (`since` ≤ accepted < `until`, ids below `before`); null when empty. */
export function listedIdRange(query: { since?: string; until?: string; before?: string }) {
  const gte = query.since === undefined ? undefined : firstIdAt(new Date(query.since));
  const bounds = [
    query.until === undefined ? undefined : firstIdAt(new Date(query.until)),
    query.before?.toLowerCase(),
  ];
  const lt = bounds.filter((b): b is string => b !== undefined).sort()[0];
  if (gte !== undefined && lt !== undefined && gte >= lt) return null;
  return { ...(gte === undefined ? {} : { gte }), ...(lt === undefined ? {} : { lt }) };
}

const eventLog: FastifyPluginAsyncTypebox<EventLogRoutesOptions> = async (
  app,
  { views, catalogue, relayCopies },
) => {
  const findEvent = async (accountId: string, id: string) => {
    const row = isUuid(id)
      ? await app.prisma.event.findUnique({ where: { id: id.toLowerCase(), accountId } })
      : null;
    if (row === null) throw notFound(`Event ${id}`);
    return row;
  };

  app.get(
    '/api/events',
    {
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        summary: "The account's events, newest first",
        querystring: EventListQuery,
        response: { 200: Page(EventSummary), ...problemResponses },
      },
    },
    async (request) => {
      const page = pageRequest(
        request.query,
        'narrow the query with event_type, since or until, or read on with before set to the id of the last event seen',
      );
      const types = listedEventTypes(request.query, catalogue);
      const ids = listedIdRange(request.query);
      if (ids === null) return views.eventsPage(request.query, page, 0, []);
      const where = {
        accountId: request.accountId,
        id: ids,
        ...(types === null ? {} : { type: { in: types } }),
      };
      const [count, rows] = await app.prisma.$transaction([
        app.prisma.event.count({ where, take: page.skip + eventCountWindow }),
        app.prisma.event.findMany({
          where,
          select: { id: true, type: true, occurredAt: true, createdAt: true, payloadExpungedAt: true },
          orderBy: { id: 'desc' },
          skip: page.skip,
          take: page.pageSize,
        }),
      ]);
      return views.eventsPage(request.query, page, count, rows);
    },
  );

  app.get(
    '/api/events/:id',
    {
      schema: {
        tags: ['events'],
        operationId: 'getEvent',
        summary: 'One event, its data, and its delivery to each subscription',
        params: EventParams,
        response: { 200: EventDetail, ...problemResponses },
      },
    },
    async (request) => {
      const event = await findEvent(request.accountId, request.params.id);
      const [low, high] = timeIdRange([event.id]);
      const deliveries = await app.prisma.delivery.findMany({
        where: { eventId: event.id, id: { gte: low, lte: high } },
        orderBy: { subscriptionId: 'asc' },
      });
      return views.eventDetail(event, deliveries);
    },
  );

  app.delete(
    '/api/events/:id/payload',
    {
      config: { portalRefused: true },
      schema: {
        tags: ['events'],
        operationId: 'expungeEventPayload',
        summary: "Expunge an event's data",
        description:
          'Empties the event\'s `data` for good, for a privacy request. Its deliveries and attempts stay in the log, marked `payload_expunged`; those still pending are cancelled (`last_error: "expunged"`), never sent with an empty body, and the attempts\' response bodies and transformation errors, which may quote the data, are cleared. An attempt already on its way when this is called still completes. Repeating it changes nothing.',
        params: EventParams,
        response: {
          204: { type: 'null', description: 'Expunged (or already expunged)' },
          403: problemResponse('Portal session tokens cannot expunge events'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const event = await findEvent(request.accountId, request.params.id);
      const [low, high] = timeIdRange([event.id]);
      await app.prisma.$transaction([
        app.prisma.$executeRaw`UPDATE events SET data = '{}'::jsonb,
            payload_expunged_at = coalesce(payload_expunged_at, now())
          WHERE id = ${event.id}::uuid AND account_id = ${request.accountId}`,
        app.prisma.$executeRaw`UPDATE deliveries SET status = 'cancelled', last_error = 'expunged',
            next_attempt_at = NULL, updated_at = now()
          WHERE event_id = ${event.id}::uuid AND id BETWEEN ${low}::uuid AND ${high}::uuid AND status = 'pending'`,
        // What a receiver echoed, and what a transformation threw, may quote the data too.
        app.prisma.$executeRaw`UPDATE delivery_attempts SET response_body = NULL,
            error_message = CASE WHEN error_class = 'transformation_failed' THEN 'expunged' ELSE error_message END
          WHERE delivery_id BETWEEN ${low}::uuid AND ${high}::uuid
            AND delivery_id IN (SELECT id FROM deliveries
              WHERE event_id = ${event.id}::uuid AND id BETWEEN ${low}::uuid AND ${high}::uuid)
            AND (response_body IS NOT NULL OR error_class = 'transformation_failed')`,
      ]);
      try {
        await relayCopies.expungeEvent(request.accountId, event.id);
      } catch (error) {
        request.log.warn(
          { err: error, eventId: event.id },
          "the expunged event's relayed copies stay in Redis until their attempts end",
        );
      }
      try {
        await app.publisher.discardFinished(request.accountId, event.id);
      } catch (error) {
        request.log.warn(
          { err: error, eventId: event.id },
          "the expunged event's fan-out job stays in Redis until its retention ends",
        );
      }
      return reply.code(204).send(null);
    },
  );
};

export default fp(eventLog, { name: 'event-log-routes', encapsulate: true });
