/**
 * Wire schema of a subscription's `destination` (docs/destinations.md): where its deliveries go. The
 * checks beyond a schema's (names, regions, key templates) are `checkDestination`'s.
 */
import Type, { type TSchema } from 'typebox';
import { maxBrokerNameBytes } from '../destination.js';
import {
  defaultEventSource,
  defaultObjectKey,
  maxKeyPointerLength,
  maxObjectKeyTemplateBytes,
  maxObjectPrefixBytes,
  objectKeyFields,
} from '../aws-destination.js';

/** A JSON Pointer into the payload whose value is `what`, instead of the subscription's id. */
const KeyPointer = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: maxKeyPointerLength,
    description: `JSON Pointer (RFC 6901) to a string or number of the payload used as ${what}, such as \`/data/call_id\`; the subscription's id when unset or when the payload has no such value`,
  });

const BrokerName = Type.String({
  minLength: 1,
  maxLength: 63,
  description: 'A broker the deployment names in DESTINATION_BROKERS',
});
/** Customer-owned credentials, as the API takes them (`aws-credentials.ts`). */
const AwsCredentialsInput = Type.Union(
  [
    Type.Object(
      {
        type: Type.Literal('role'),
        role_arn: Type.String({
          minLength: 1,
          maxLength: 600,
          description: 'An IAM role ARN in your AWS account',
        }),
      },
      {
        additionalProperties: false,
        description:
          "A role of yours the service assumes (STS AssumeRole) with an external id it generates for this subscription, shown once in this request's answer: name both in the role's trust policy",
      },
    ),
    Type.Object(
      {
        type: Type.Literal('access_key'),
        access_key_id: Type.String({ minLength: 16, maxLength: 128 }),
        secret_access_key: Type.String({
          minLength: 1,
          maxLength: 128,
          description: 'Sealed at rest; never shown again',
        }),
      },
      {
        additionalProperties: false,
        description: "An IAM user's access keys: a fallback where a role cannot be used",
      },
    ),
  ],
  {
    description:
      "Whose AWS identity writes: unset, the deployment's own (DESTINATION_BROKERS); set, yours. Changing the destination without it removes it",
  },
);

/** Customer-owned credentials, as the API shows them. */
const AwsCredentialsView = Type.Union([
  Type.Object(
    {
      type: Type.Literal('role'),
      role_arn: Type.String(),
      external_id: Type.Optional(
        Type.String({
          description:
            'The `sts:ExternalId` your trust policy must require; in the answer of the request that set the role only',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    { type: Type.Literal('access_key'), access_key_id: Type.String() },
    { additionalProperties: false },
  ),
]);

/** The AWS destination types, with `credentials` as the API takes or shows them. */
const awsDestinations = (credentials: TSchema) => [
  Type.Object(
    {
      type: Type.Literal('sqs'),
      broker: BrokerName,
      credentials: Type.Optional(credentials),
      queue: Type.String({
        minLength: 1,
        maxLength: 80,
        pattern: '^[A-Za-z0-9_.-]+$',
        description:
          "Amazon SQS queue name in the broker's region (it must exist); a name ending in `.fifo` is a FIFO queue",
      }),
      message_group: Type.Optional(KeyPointer("a FIFO queue's message group")),
    },
    {
      additionalProperties: false,
      description:
        'Send to an Amazon SQS queue; delivered once SQS accepts the message. The Standard Webhooks headers travel as message attributes, with `webhook-delivery-id` the delivery id; on a FIFO queue the message group is the subscription (ordered per subscription) or `message_group`, and the deduplication id the delivery id, so SQS drops a retry of a message it has',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('sns'),
      broker: BrokerName,
      credentials: Type.Optional(credentials),
      topic_arn: Type.String({
        minLength: 1,
        maxLength: 512,
        description:
          "Amazon SNS topic ARN in the broker's region (it must exist); a name ending in `.fifo` is a FIFO topic",
      }),
      message_group: Type.Optional(KeyPointer("a FIFO topic's message group")),
    },
    {
      additionalProperties: false,
      description:
        'Publish to an Amazon SNS topic; delivered once SNS accepts the message. Attributes and FIFO topics as for `sqs`',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('eventbridge'),
      broker: BrokerName,
      credentials: Type.Optional(credentials),
      event_bus: Type.String({
        minLength: 1,
        maxLength: 1600,
        description:
          "Amazon EventBridge event bus name or ARN in the broker's region (`default` is the account's own)",
      }),
      source: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 256,
          description: `The entries' \`Source\`, for rules to match (default \`${defaultEventSource}\`; not \`aws.…\`)`,
        }),
      ),
    },
    {
      additionalProperties: false,
      description:
        'Put one event on an Amazon EventBridge bus per delivery (`PutEvents`); delivered once EventBridge accepts the entry, a failed entry failing the attempt. `DetailType` is the event type and `Detail` is `{"metadata": {<Standard Webhooks headers>, "webhook-delivery-id"}, "payload": <the payload>}`; verify `JSON.stringify(detail.payload)`',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('kinesis'),
      broker: BrokerName,
      credentials: Type.Optional(credentials),
      stream: Type.String({
        minLength: 1,
        maxLength: 128,
        description: "Amazon Kinesis data stream name in the broker's region (it must exist)",
      }),
      partition_key: Type.Optional(KeyPointer('the partition key')),
    },
    {
      additionalProperties: false,
      description:
        'Put one record on an Amazon Kinesis data stream per delivery; delivered once Kinesis accepts it. The partition key is the subscription (its records stay in order on one shard) or `partition_key`\'s field; the data is `{"metadata": {…}, "payload": …}` as for `eventbridge`',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('s3'),
      broker: BrokerName,
      credentials: Type.Optional(credentials),
      bucket: Type.String({
        minLength: 3,
        maxLength: 63,
        description: "Amazon S3 bucket in the broker's region (it must exist)",
      }),
      prefix: Type.Optional(
        Type.String({
          maxLength: maxObjectPrefixBytes,
          description: 'Fills `{prefix}` of `key` (default empty), such as `webhooks/`',
        }),
      ),
      key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: maxObjectKeyTemplateBytes,
          description: `The object key's template (default \`${defaultObjectKey}\`): ${objectKeyFields.map((f) => `\`{${f}}\``).join(', ')}; dates are the event's, in UTC; \`{delivery_id}\` is required, so a retry overwrites its own object`,
        }),
      ),
    },
    {
      additionalProperties: false,
      description:
        'Write one object per delivery to an Amazon S3 bucket (`PutObject`, `application/json`); delivered once S3 stores it. The body is the payload; the Standard Webhooks headers and `webhook-delivery-id` are its user metadata (`x-amz-meta-*`)',
    },
  ),
];

/** The destinations every deployment knows: the HTTP callback, the CLI relay, RabbitMQ and NATS. */
const serverDestinations = [
  Type.Object(
    { type: Type.Literal('http') },
    { additionalProperties: false, description: 'POST to `callback_url` (the default)' },
  ),
  Type.Object(
    { type: Type.Literal('cli') },
    {
      additionalProperties: false,
      description:
        'Relay to `webhooks listen` on a developer machine through this service (`GET /api/webhooks/{id}/listen`); set on create only, its `callback_url` is `cli://<session>`',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('rabbitmq'),
      broker: BrokerName,
      exchange: Type.String({
        maxLength: maxBrokerNameBytes,
        description: 'Exchange published to (it must exist); empty: the default exchange',
      }),
      routing_key: Type.String({ maxLength: maxBrokerNameBytes }),
    },
    {
      additionalProperties: false,
      description:
        'Publish to a RabbitMQ exchange, persistent and mandatory; delivered once the broker confirms it (publisher confirms), failed when no queue is bound for the routing key',
    },
  ),
  Type.Object(
    {
      type: Type.Literal('nats'),
      broker: BrokerName,
      subject: Type.String({
        minLength: 1,
        maxLength: maxBrokerNameBytes,
        description: 'JetStream subject, no wildcards; a stream must store it',
      }),
    },
    {
      additionalProperties: false,
      description:
        'Publish to a NATS JetStream subject; delivered once JetStream acknowledges it (with the `webhook-id` as its message id, so JetStream drops a repeat within its duplicate window)',
    },
  ),
];

/** What the destination field says, taken or shown. */
const destinationDescription =
  'Where deliveries go: an HTTP callback (default), or a broker or AWS service of the deployment. Messages carry the payload as their body and the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) and custom headers as message headers or attributes, so one verifier serves every destination; EventBridge and Kinesis, which have no attributes, carry both in one JSON envelope';

/** A subscription's destination as the API takes it: `http` (the default), `cli`, or a broker or AWS service of DESTINATION_BROKERS. */
export const Destination = Type.Union([...serverDestinations, ...awsDestinations(AwsCredentialsInput)], {
  description: destinationDescription,
});

/** A subscription's destination as the API shows it: credentials without their secret. */
export const DestinationView = Type.Union([...serverDestinations, ...awsDestinations(AwsCredentialsView)], {
  description: destinationDescription,
});
