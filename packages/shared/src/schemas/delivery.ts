/** Wire schemas of the delivery log (`/api/webhooks/{id}/deliveries`). */
import Type, { type Static } from 'typebox';
import { PageQuery } from './pagination.js';

/** A delivery's status. */
export const DeliveryStatus = Type.Union(
  [Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')],
  {
    description:
      'pending: attempts remain; succeeded: a 200 was received; failed: given up (after its last attempt, or `expired` unsent after DELIVERY_MAX_AGE); cancelled: subscription disabled',
  },
);

/** One HTTP request of a delivery. */
export const DeliveryAttempt = Type.Object({
  attempt_number: Type.Integer({ description: 'From 1, counted across retry rounds' }),
  started_at: Type.String({ format: 'date-time' }),
  duration_ms: Type.Integer({
    description: 'Milliseconds from connect to the end of the answer or the error',
  }),
  status_code: Type.Union([Type.Integer(), Type.Null()], {
    description: 'HTTP status answered, null when none (and for a broker destination)',
  }),
  error: Type.Union([Type.String(), Type.Null()], {
    description:
      'timeout | connection_refused | connection_reset | unreachable_address (the host does not resolve, or its address is refused) | http_status | transformation_failed | auth_failed (no token from the OAuth 2.0 token URL) | broker_unavailable | broker_refused (a missing exchange, stream, queue, topic, bus or bucket, a nack, an access denied) | broker_unroutable (no queue bound for the routing key) | broker_throttled (an AWS service throttled the write: retried, not counted by the breaker) | other',
  }),
  error_message: Type.Union([Type.String(), Type.Null()]),
  response_body: Type.Union([Type.String(), Type.Null()], { description: 'First 4 KiB of the answer' }),
  in_flight_limit: Type.Union([Type.Integer(), Type.Null()], {
    description:
      "The subscription's in-flight limit when this attempt was sent; below the maximum while the callback was throttled",
  }),
});

/** A delivery as listed. */
export const Delivery = Type.Object({
  id: Type.String(),
  resource_uri: Type.String(),
  subscription: Type.Object({ resource_uri: Type.String() }),
  event_id: Type.String({ description: 'Also the `webhook-id` header of every attempt' }),
  type: Type.String(),
  status: DeliveryStatus,
  attempts_made: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()], {
    description:
      "The last attempt's error class, or `expired` for a delivery given up unsent after DELIVERY_MAX_AGE",
  }),
  next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type Delivery = Static<typeof Delivery>;

/**
 * The JSON body POSTed to a callback URL (docs/api.md#what-a-callback-receives; built by payload.ts,
 * buildDeliveryPayload). A component of its own, so clients type what their receivers parse.
 */
export const WebhookPayload = Type.Object(
  {
    timestamp: Type.String({ description: 'When the event occurred: UTC, ISO 8601, no zone designator' }),
    type: Type.Optional(
      Type.String({
        description:
          'Event type, `<resource>.<action>`; present when the subscription receives more than one type',
      }),
    ),
    webhook_id: Type.Optional(
      Type.String({ description: "The subscription's `webhook_id`; present only when one was given" }),
    ),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'The content of the event' }),
  },
  { $id: 'WebhookPayload', description: 'The JSON body POSTed to the callback' },
);
export type WebhookPayload = Static<typeof WebhookPayload>;

/** A delivery read alone: with the payload sent and every attempt. */
export const DeliveryDetail = Type.Object({
  ...Delivery.properties,
  payload: WebhookPayload,
  payload_expunged: Type.Boolean({
    description: "True once the event's data was expunged: `payload.data` is then `{}`, not what was sent",
  }),
  attempts: Type.Array(DeliveryAttempt),
});
export type DeliveryDetail = Static<typeof DeliveryDetail>;

/** Query of `GET /api/webhooks/{id}/deliveries`. */
export const DeliveryListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(DeliveryStatus),
    before: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'Only the deliveries listed after this one (newest first): the `id` of the last delivery seen, to read on past the deepest page',
      }),
    ),
  },
  { additionalProperties: false },
);
export type DeliveryListQuery = Static<typeof DeliveryListQuery>;

/** Body of `POST /api/webhooks/{id}/recover` (the shape of Svix's recover). */
export const RecoverRequest = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description: 'Recover deliveries created at or after this time (ISO 8601)',
    }),
    until: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'And before this time (ISO 8601); now if omitted',
      }),
    ),
    after: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          "Continue a recovery: the previous answer's `continue_after`, with the same `since` and its `until`",
      }),
    ),
  },
  { additionalProperties: false },
);
export type RecoverRequest = Static<typeof RecoverRequest>;

/** Answer of `POST /api/webhooks/{id}/recover` (202). */
export const RecoverAccepted = Type.Object({
  count: Type.Integer({
    description:
      'Failed or cancelled deliveries sent again by this call, each as a fresh round (at most 1,000)',
  }),
  until: Type.String({ format: 'date-time', description: 'End of the window recovered' }),
  continue_after: Type.Union([Type.String(), Type.Null()], {
    description:
      'null when the window is done; else more remain: call again with the same `since`, this `until` and `after` set to this value',
  }),
});
export type RecoverAccepted = Static<typeof RecoverAccepted>;

/** Answer of `GET /api/webhooks/{id}/stats`: the health of a subscription's recent deliveries. */
export const DeliveryStats = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Start of the window: 24 hours ago' }),
  succeeded: Type.Integer({ description: 'Deliveries created since then that a 200 confirmed' }),
  failed: Type.Integer({ description: 'Given up' }),
  pending: Type.Integer({ description: 'Attempts remain' }),
  cancelled: Type.Integer({ description: 'Cancelled when the subscription was disabled' }),
  success_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
    description: 'succeeded / (succeeded + failed); null when none has finished',
  }),
});
export type DeliveryStats = Static<typeof DeliveryStats>;

/** One window of {@link SubscriptionHealth}. */
export const HealthWindow = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Start of the window' }),
  attempts: Type.Integer({ description: 'Attempts started in the window' }),
  succeeded: Type.Integer({ description: 'Of them, those a 200 confirmed' }),
  success_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
    description: 'succeeded / attempts; null without attempts',
  }),
  latency_ms: Type.Union(
    [
      Type.Object({
        p50: Type.Number({ description: 'Median attempt duration, ms' }),
        p95: Type.Number({ description: '95th percentile, ms' }),
      }),
      Type.Null(),
    ],
    {
      description: 'Attempt durations, from the request to the answer or the failure; null without attempts',
    },
  ),
});

/** Answer of `GET /api/webhooks/{id}/health`: how the subscription's endpoint answers lately. */
export const SubscriptionHealth = Type.Object({
  subscription: Type.Object({ resource_uri: Type.String() }),
  state: Type.Union(
    [Type.Literal('idle'), Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('failing')],
    {
      description:
        'idle: no attempt in 24 hours; failing: 5 failed attempts in a row, or under half of the last 15 minutes’ confirmed (from 10 attempts); degraded: the last attempt failed, or under 95% confirmed; else healthy',
    },
  ),
  consecutive_failures: Type.Integer({
    description: 'Attempts since the last confirmed one, within 24 hours',
  }),
  last_success_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When the last confirmed attempt started, within 24 hours',
  }),
  last_failure: Type.Union(
    [
      Type.Object({
        at: Type.String({ format: 'date-time' }),
        status_code: Type.Union([Type.Integer(), Type.Null()], {
          description: 'The answer, null without one',
        }),
        error: Type.Union([Type.String(), Type.Null()], {
          description: 'timeout, connection_refused, dns, blocked_address, http_status, …',
        }),
      }),
      Type.Null(),
    ],
    { description: 'The last failed attempt within 24 hours' },
  ),
  windows: Type.Object({
    last_15_minutes: HealthWindow,
    last_24_hours: HealthWindow,
  }),
  hourly: Type.Array(
    Type.Object({
      hour: Type.String({ format: 'date-time', description: 'The hour’s start (UTC)' }),
      succeeded: Type.Integer({ description: 'Attempts a 200 confirmed' }),
      failed: Type.Integer({ description: 'Attempts that failed' }),
      latency_ms: Type.Union([Type.Object({ p50: Type.Number(), p95: Type.Number() }), Type.Null()], {
        description: 'The attempts’ durations, in ms; null without attempts',
      }),
    }),
    { description: 'The last 24 hours by hour, oldest first, the current hour last' },
  ),
});
export type SubscriptionHealth = Static<typeof SubscriptionHealth>;
