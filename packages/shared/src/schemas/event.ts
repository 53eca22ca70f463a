/** Wire schemas of events: `POST /api/events` and the event catalogue. */
import Type, { type Static } from 'typebox';

/**
 * Most top-level fields of an event's `data`. Its size is bounded already; this bounds the work of
 * checking it, field by field, and of every error a wrong one would report.
 */
export const maxEventDataFields = 1_000;

/** Body of `POST /api/events`. */
export const EventCreate = Type.Object(
  {
    type: Type.String({
      description: 'Event type of the catalogue, `<resource>.<action>`',
      examples: ['call.completed'],
    }),
    data: Type.Record(Type.String(), Type.Unknown(), {
      maxProperties: maxEventDataFields,
      description: `The event content, at most 256 KiB serialized and ${maxEventDataFields} fields at its top level`,
    }),
    occurred_at: Type.Optional(
      Type.String({ format: 'date-time', description: 'When it occurred; now if omitted' }),
    ),
    idempotency_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Same key within 24 hours: the first event is returned',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventCreate = Static<typeof EventCreate>;

/** Answer of `POST /api/events` (202). */
export const EventAccepted = Type.Object({
  id: Type.String({ description: 'Event id: the `webhook-id` header of its deliveries' }),
  timestamp: Type.String({ description: 'The payload timestamp: UTC, ISO 8601, no zone designator' }),
  duplicate: Type.Boolean({ description: 'True when the idempotency key was seen within 24 hours' }),
});
export type EventAccepted = Static<typeof EventAccepted>;

/** Answer of `GET /api/event-types`. */
export const EventCatalogueResponse = Type.Object({
  kinds: Type.Array(
    Type.Object({
      kind: Type.String(),
      description: Type.String(),
      subscribe_uri: Type.String({ description: 'Endpoint creating a subscription of this kind' }),
      types: Type.Array(Type.String()),
      event_types: Type.Array(
        Type.Object({
          type: Type.String({ description: '`<resource>.<action>`' }),
          description: Type.String(),
          schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
            description:
              'JSON Schema (draft 2020-12) that `data` of `POST /api/events` must match; null: any object',
          }),
          deprecated: Type.Boolean({ description: 'Still delivered; move off it' }),
        }),
        { description: 'Each type of the kind with its description, schema and deprecation' },
      ),
      example_data: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown()), {
        description: 'Example `data` of each type of the kind, keyed by type; test events carry it',
      }),
    }),
  ),
});
export type EventCatalogueResponse = Static<typeof EventCatalogueResponse>;

/** Body of `POST /api/webhooks/{id}/test-events`. */
export const TestEventCreate = Type.Object(
  {
    type: Type.Optional(
      Type.String({
        description:
          "An event type the subscription receives; its catalogue example is sent. Default: the subscription's first type",
        examples: ['call.completed'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type TestEventCreate = Static<typeof TestEventCreate>;
