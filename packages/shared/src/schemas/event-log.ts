/**
 * Wire schemas of the events API: `GET /api/events` (an account's events, newest first),
 * `GET /api/events/{id}` (one event with its deliveries to each subscription) and
 * `DELETE /api/events/{id}/payload` (payload expunge).
 */
import Type, { type Static } from 'typebox';
import { DeliveryStatus } from './delivery.js';
import { PageQuery } from './pagination.js';

/** Most event types one list query may name. */
export const maxListedEventTypes = 20;

const expungedFields = {
  payload_expunged: Type.Boolean({
    description: "True once the event's data was expunged (`DELETE /api/events/{id}/payload`)",
  }),
  payload_expunged_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
};

/** An event as listed. */
export const EventSummary = Type.Object({
  id: Type.String({ description: 'Also the `webhook-id` header of every delivery of it' }),
  resource_uri: Type.String(),
  type: Type.String(),
  timestamp: Type.String({ description: 'When the event occurred: UTC, ISO 8601, no zone designator' }),
  created_at: Type.String({ format: 'date-time', description: 'When the service accepted it' }),
  ...expungedFields,
});
export type EventSummary = Static<typeof EventSummary>;

/** One event's delivery to one subscription, as an event read alone lists it. */
export const EventDelivery = Type.Object({
  id: Type.String(),
  resource_uri: Type.String({ description: "The delivery in its subscription's delivery log" }),
  subscription: Type.Object({ id: Type.String(), resource_uri: Type.String() }),
  status: DeliveryStatus,
  attempts_made: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()], {
    description: "The last attempt's error class; `expired` or `expunged` for one given up unsent",
  }),
  next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  updated_at: Type.String({ format: 'date-time' }),
});
export type EventDelivery = Static<typeof EventDelivery>;

/** An event read alone: its data (empty once expunged) and its delivery to each subscription. */
export const EventDetail = Type.Object({
  ...EventSummary.properties,
  data: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The content of the event; `{}` once expunged',
  }),
  deliveries: Type.Array(EventDelivery, {
    description: 'One per subscription it went to, oldest subscription first',
  }),
});
export type EventDetail = Static<typeof EventDetail>;

/** Query of `GET /api/events`. */
export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    event_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2_000,
        description: `Only events of these types, comma-separated (at most ${maxListedEventTypes})`,
        examples: ['call.completed,call.failed'],
      }),
    ),
    type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2_000,
        description: 'The same as `event_type`, as Stripe names it; give one of the two',
        examples: ['call.completed'],
      }),
    ),
    since: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only events accepted at or after this time' }),
    ),
    until: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only events accepted before this time' }),
    ),
    before: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'Only the events listed after this one (newest first): the `id` of the last event seen, to read on past the deepest page',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventListQuery = Static<typeof EventListQuery>;

/** Path parameters of one event. */
export const EventParams = Type.Object({
  id: Type.String({ description: 'The event id (`webhook-id`)' }),
});
export type EventParams = Static<typeof EventParams>;
