/** Wire schemas of webhook subscriptions (docs/api.md). Fields are snake_case. */
import Type, { type Static } from 'typebox';
import { maxFilterBytes, maxFilterOperands, maxFilterOperators, maxFilterVisits } from '../event-filter.js';
import { maxSelectedEventTypes } from '../event-type-selection.js';
import {
  maskedHeaderValue,
  maxCustomHeaderNameLength,
  maxCustomHeaders,
  maxCustomHeaderValueLength,
  maxCustomHeadersBytes,
} from '../custom-headers.js';
import { maxClientCertificatePem } from '../client-certificate.js';
import { Destination, DestinationView } from './destination.js';
import { PageQuery } from './pagination.js';
import { ReceiverAuthInput, ReceiverAuthView } from './receiver-auth.js';
import { TransformationField } from './transformation.js';

/** Longest callback URL accepted, in characters. */
export const maxCallbackUrlLength = 2048;
/** Longest client-chosen `webhook_id`, in characters. */
export const maxWebhookIdLength = 255;

const CallbackUrl = Type.String({
  minLength: 1,
  maxLength: maxCallbackUrlLength,
  description:
    'Absolute http(s) URL in the client application that receives event payloads; required unless `destination` is a broker, and left out then',
  examples: ['https://client.example/hooks/calls'],
});
const WebhookId = Type.String({
  maxLength: maxWebhookIdLength,
  description: 'Label chosen by the client, echoed as `webhook_id` in every payload of this subscription',
});
const SubscriptionStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled')], {
  description: '`disabled` after too many deliveries failed in a row, or when set by the client',
});
const SubscriptionState = Type.Union(
  [Type.Literal('active'), Type.Literal('disabled'), Type.Literal('pending')],
  {
    description:
      '`pending` until the callback answers the signed challenge (with CALLBACK_VERIFICATION=challenge), receiving nothing meanwhile; `disabled` after too many deliveries failed in a row, or when set by the client',
  },
);
const RateLimit = Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()], {
  description:
    'Deliveries a second at most to this callback, across all workers (null: no limit); deliveries held back wait without using attempts',
});
const Kind = Type.String({ description: 'Event kind of the catalogue this subscription is limited to' });
const Ordering = Type.Union([Type.Literal('none'), Type.Literal('fifo')], {
  description:
    '`fifo`: events reach the callback one at a time, in the order they were accepted for the account; a failing one holds back the later ones until it succeeds or is given up. `none` (default): in parallel, as fast as the callback takes them',
});
const EventTypes = Type.Array(Type.String({ maxLength: 101 }), {
  minItems: 1,
  maxItems: maxSelectedEventTypes,
  description:
    'Event types this subscription receives: exact types (`call.completed`) and wildcards (`call.*`, `*` for every type it may receive). Default: every type of its kind, or of the catalogue at the general endpoint. Unknown types and wildcards that match nothing are refused',
  examples: [['call.*', 'message.failed']],
});
const Filter = Type.Union(
  [
    Type.Record(Type.String(), Type.Unknown(), {
      maxProperties: 50,
      description: `MongoDB-style query on the payload (\`type\`, \`timestamp\`, \`webhook_id\`, \`data\`): only events it matches are delivered. Operators: $eq $ne $gt $gte $lt $lte $in $nin $all $exists $and $or $nor $not; at most ${maxFilterBytes} bytes, 8 levels, ${maxFilterOperators} operators and ${maxFilterOperands} operands to each $in, $nin or $all. An evaluation that visits more than ${maxFilterVisits} values in a payload matches nothing`,
      examples: [{ 'data.direction': 'inbound', 'data.duration_seconds': { $gte: 60 } }],
    }),
    Type.Null(),
  ],
  { description: 'null: no filter' },
);

const CustomHeaders = Type.Union(
  [
    Type.Record(
      Type.String({ maxLength: maxCustomHeaderNameLength }),
      Type.String({ maxLength: maxCustomHeaderValueLength }),
      {
        maxProperties: maxCustomHeaders,
        description: `Headers sent with every delivery to this callback (an API key for the gateway in front of it, say), stored encrypted. At most ${maxCustomHeaders} and ${maxCustomHeadersBytes} bytes; names are HTTP tokens, values have no control characters; \`webhook-*\`, \`content-*\`, \`host\`, \`user-agent\` and the hop-by-hop headers are refused`,
        examples: [{ authorization: 'Bearer gateway-key', 'x-tenant': 'acme' }],
      },
    ),
    Type.Null(),
  ],
  { description: 'null: none' },
);

const ClientCertificateInput = Type.Union(
  [
    Type.Object(
      {
        certificate: Type.String({
          maxLength: maxClientCertificatePem,
          description: 'PEM certificate (with its chain after it, if any)',
        }),
        key: Type.String({
          maxLength: maxClientCertificatePem,
          description: 'Its unencrypted PEM private key',
        }),
      },
      {
        additionalProperties: false,
        description:
          "Client certificate (mutual TLS) presented to the callback's server when it asks for one; the key is stored encrypted and never shown again",
      },
    ),
    Type.Null(),
  ],
  { description: 'null: none' },
);

const SignatureSchemeField = Type.Union([Type.Literal('v1'), Type.Literal('v1a')], {
  description:
    'Standard Webhooks signature scheme: `v1` (default), HMAC-SHA256 with a shared secret (`whsec_`); `v1a`, Ed25519 with a key the service keeps, verified with its public key (`whpk_`), so the receiver holds no secret. Set at creation',
});

/** Body of `POST /api/webhooks` and `POST /api/webhooks/{kind}`. */
export const SubscriptionCreate = Type.Object(
  {
    callback_url: Type.Optional(CallbackUrl),
    destination: Type.Optional(Destination),
    webhook_id: Type.Optional(WebhookId),
    rate_limit: Type.Optional(RateLimit),
    event_types: Type.Optional(EventTypes),
    filter: Type.Optional(Filter),
    ordering: Type.Optional(Ordering),
    headers: Type.Optional(CustomHeaders),
    client_certificate: Type.Optional(ClientCertificateInput),
    auth: Type.Optional(ReceiverAuthInput),
    transformation: Type.Optional(TransformationField),
    signature_scheme: Type.Optional(SignatureSchemeField),
    account_id: Type.Optional(
      Type.String({
        maxLength: 255,
        description: 'Must equal the token subject when sent; taken from the token otherwise',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;

/** Body of `PUT /api/webhooks/{id}`: any of the changeable fields. */
export const SubscriptionUpdate = Type.Object(
  {
    callback_url: Type.Optional(CallbackUrl),
    destination: Type.Optional(Destination),
    webhook_id: Type.Optional(Type.Union([WebhookId, Type.Null()])),
    status: Type.Optional(SubscriptionStatus),
    rate_limit: Type.Optional(RateLimit),
    event_types: Type.Optional(EventTypes),
    filter: Type.Optional(Filter),
    ordering: Type.Optional(Ordering),
    headers: Type.Optional(CustomHeaders),
    client_certificate: Type.Optional(ClientCertificateInput),
    auth: Type.Optional(Type.Union([ReceiverAuthInput, Type.Null()])),
    transformation: Type.Optional(TransformationField),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>;

/** A subscription as the API returns it. */
export const Subscription = Type.Object(
  {
    id: Type.String({ description: 'Service-assigned identifier (UUIDv7)' }),
    resource_uri: Type.String({ description: 'Path of this subscription' }),
    callback_url: Type.String({
      description:
        'The callback URL; for a broker destination, its URI (`rabbitmq://<broker>/<exchange>/<routing key>`, `nats://<broker>/<subject>`, `sqs://<broker>/<queue>`, `sns://<broker>/<topic ARN>`, `eventbridge://<broker>/<bus>/<source>`, `kinesis://<broker>/<stream>`, `s3://<broker>/<bucket>/<prefix>/<key>`, each part percent-encoded)',
    }),
    destination: DestinationView,
    webhook_id: Type.Union([Type.String(), Type.Null()]),
    account_id: Type.String(),
    kind: Type.Union([Kind, Type.Null()], { description: 'null: receives every event type of the account' }),
    event_types: Type.Array(Type.String(), {
      description:
        'Event types this subscription receives: as chosen (types and wildcards), or every type of its kind when none were chosen',
    }),
    filter: Filter,
    ordering: Ordering,
    headers: Type.Record(Type.String(), Type.Literal(maskedHeaderValue), {
      description:
        'The custom headers sent with every delivery, their values masked: `GET /api/webhooks/{id}/headers` reads them',
    }),
    client_certificate: Type.Union(
      [
        Type.Object({
          subject: Type.String(),
          issuer: Type.String(),
          valid_to: Type.String({ format: 'date-time' }),
          fingerprint_sha256: Type.String(),
        }),
        Type.Null(),
      ],
      {
        description:
          'The client certificate presented to the callback (mutual TLS), without its key; null: none',
      },
    ),
    auth: Type.Union([ReceiverAuthView, Type.Null()], {
      description:
        'How the service authenticates to the callback, its secret masked; null: by the signature alone',
    }),
    transformation: Type.Union([Type.String(), Type.Null()], {
      description: 'The JavaScript run on each webhook before it is sent; null: none',
    }),
    signature_scheme: SignatureSchemeField,
    status: SubscriptionState,
    rate_limit: RateLimit,
    delivery: Type.Object(
      {
        in_flight_limit: Type.Integer({
          minimum: 1,
          description:
            "Attempts to this callback in flight at once; it starts at the service's base, falls when attempts time out or fail to connect, and rises with successes, past the base (up to the service's ceiling) while the callback answers 200 at its usual pace",
        }),
        state: Type.Union([Type.Literal('healthy'), Type.Literal('throttled')], {
          description: "`throttled` while `in_flight_limit` is below the service's base",
        }),
        breaker: Type.Object(
          {
            state: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half_open')], {
              description:
                'closed: deliveries flow; open: after failing attempts, deliveries wait (using no attempts) until `retry_at`; half_open: one probe attempt decides',
            }),
            opened_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
              description: 'When the breaker opened; null while closed',
            }),
            retry_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
              description: 'When the next probe attempt may go; null while closed',
            }),
          },
          {
            description:
              "The callback's circuit breaker: it opens after a run of failed attempts or a high failure rate (`subscription.failing`) and closes when an attempt is confirmed (`subscription.recovered`)",
          },
        ),
      },
      { description: 'How the service currently paces deliveries to this callback' },
    ),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Subscription' },
);
export type Subscription = Static<typeof Subscription>;

/** The signing secret, Standard Webhooks format `whsec_` + base64. */
export const SigningSecret = Type.Object({
  secret: Type.String({
    description: 'Current signing secret (`whsec_`), or for `v1a` the public key that verifies (`whpk_`)',
  }),
  previous_secret_expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Until then the secret replaced by the last rotation signs too (a second signature)',
  }),
});
export type SigningSecret = Static<typeof SigningSecret>;

/** The custom headers of a subscription with their values (`GET /api/webhooks/{id}/headers`). */
export const CustomHeadersView = Type.Object({
  headers: Type.Record(Type.String(), Type.String(), {
    description: 'Every custom header sent with the deliveries, by lower-case name',
  }),
});
export type CustomHeadersView = Static<typeof CustomHeadersView>;

/** A created subscription: the only answer that carries the signing secret unasked. */
export const SubscriptionCreated = Type.Object({
  ...Subscription.properties,
  secret: Type.String({
    description:
      'Signing secret of the deliveries (Standard Webhooks, `whsec_` + base64), or for `v1a` the public key that verifies them (`whpk_` + base64)',
  }),
});
export type SubscriptionCreated = Static<typeof SubscriptionCreated>;

/** Query of `GET /api/webhooks`. */
export const SubscriptionListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(
      Type.String({
        maxLength: 101,
        description:
          'Only the subscriptions that receive this event type (such as `call.started`); or, by kind, those of this kind (such as `calls`), `all` for the general ones',
      }),
    ),
    status: Type.Optional(SubscriptionState),
  },
  { additionalProperties: false },
);
export type SubscriptionListQuery = Static<typeof SubscriptionListQuery>;

/** Body of `POST /api/webhooks/{id}/filter-tests`. */
export const FilterTestCreate = Type.Object(
  {
    payload: Type.Object(
      {
        type: Type.Optional(
          Type.String({ description: 'Event type; checked against the subscription’s event_types' }),
        ),
        timestamp: Type.Optional(Type.String()),
        webhook_id: Type.Optional(Type.String()),
        data: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 1000 }),
      },
      {
        additionalProperties: false,
        description: 'A payload as the callback would receive it; the filter is evaluated against it',
        examples: [{ type: 'call.completed', data: { direction: 'inbound', duration_seconds: 184 } }],
      },
    ),
    filter: Type.Optional(Filter),
  },
  { additionalProperties: false },
);
export type FilterTestCreate = Static<typeof FilterTestCreate>;

/** Answer of `POST /api/webhooks/{id}/filter-tests`. */
export const FilterTestResult = Type.Object({
  matches: Type.Boolean({
    description: 'True when an event with this payload would be delivered to the subscription',
  }),
  filter_matches: Type.Boolean({
    description: 'True when the filter matches the payload (or there is none)',
  }),
  type_received: Type.Union([Type.Boolean(), Type.Null()], {
    description: 'Whether the subscription receives the payload’s `type`; null when the payload has none',
  }),
  filter: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: 'The filter evaluated: the one sent, or the subscription’s',
  }),
});
export type FilterTestResult = Static<typeof FilterTestResult>;
