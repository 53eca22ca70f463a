/**
 * Where a new subscription delivers: an HTTP callback, or a broker or AWS service the deployment
 * names in DESTINATION_BROKERS. Each type's fields are the API's `destination` fields
 * (docs/destinations.md); the API checks them and its errors are shown next to each.
 */
import type { paths, Problem } from '@webhooks/client';
import { fieldError } from './api-call.js';
import { Field } from './field.js';

/** One field of a destination type: its API name, label and hint; optional ones are sent only when filled. */
interface DestinationField {
  name: string;
  label: string;
  hint: string;
  optional?: boolean;
}

const broker: DestinationField = {
  name: 'broker',
  label: 'Broker',
  hint: 'The name your operator gave this broker or AWS account (DESTINATION_BROKERS).',
};

/** The broker destination types the form offers, with their fields. */
export const destinationTypes: Record<string, { label: string; fields: DestinationField[] }> = {
  sqs: {
    label: 'Amazon SQS queue',
    fields: [
      broker,
      { name: 'queue', label: 'Queue name', hint: 'It must exist; a name ending in .fifo is a FIFO queue.' },
      {
        name: 'message_group',
        label: 'Message group field (optional)',
        hint: 'FIFO queues: a JSON Pointer such as /data/call_id; empty: one group per subscription.',
        optional: true,
      },
    ],
  },
  sns: {
    label: 'Amazon SNS topic',
    fields: [
      broker,
      {
        name: 'topic_arn',
        label: 'Topic ARN',
        hint: 'arn:aws:sns:<region>:<account>:<topic>, in the broker’s region.',
      },
      {
        name: 'message_group',
        label: 'Message group field (optional)',
        hint: 'FIFO topics: a JSON Pointer such as /data/call_id; empty: one group per subscription.',
        optional: true,
      },
    ],
  },
  eventbridge: {
    label: 'Amazon EventBridge bus',
    fields: [
      broker,
      { name: 'event_bus', label: 'Event bus', hint: 'Its name or ARN; default is your account’s own bus.' },
      {
        name: 'source',
        label: 'Source (optional)',
        hint: 'For your rules to match; empty: webhooks.',
        optional: true,
      },
    ],
  },
  kinesis: {
    label: 'Amazon Kinesis data stream',
    fields: [
      broker,
      { name: 'stream', label: 'Stream name', hint: 'It must exist.' },
      {
        name: 'partition_key',
        label: 'Partition key field (optional)',
        hint: 'A JSON Pointer such as /data/call_id; empty: the subscription, so its records stay in order.',
        optional: true,
      },
    ],
  },
  s3: {
    label: 'Amazon S3 bucket',
    fields: [
      broker,
      { name: 'bucket', label: 'Bucket', hint: 'It must exist, in the broker’s region.' },
      { name: 'prefix', label: 'Key prefix (optional)', hint: 'Such as webhooks/.', optional: true },
      {
        name: 'key',
        label: 'Key template (optional)',
        hint: 'Empty: {prefix}{yyyy}/{mm}/{dd}/{event_type}/{delivery_id}.json; it must contain {delivery_id}.',
        optional: true,
      },
    ],
  },
  rabbitmq: {
    label: 'RabbitMQ exchange',
    fields: [
      broker,
      { name: 'exchange', label: 'Exchange', hint: 'It must exist.' },
      { name: 'routing_key', label: 'Routing key', hint: 'A queue must be bound for it.' },
    ],
  },
  nats: {
    label: 'NATS JetStream subject',
    fields: [broker, { name: 'subject', label: 'Subject', hint: 'A stream must store it; no wildcards.' }],
  },
};

/** A `destination` as the API takes it. */
type DestinationInput = NonNullable<
  paths['/api/webhooks']['post']['requestBody']['content']['application/json']['destination']
>;

/** The form's destination: `http`, or a broker type with its fields as typed. */
export interface DestinationChoice {
  type: string;
  fields: Record<string, string>;
}

/**
 * The request's `destination` of a broker choice, optional fields left empty left out; null for
 * `http`. Its fields are as typed: the API checks them, naming the wrong one.
 */
export function destinationBody(choice: DestinationChoice): DestinationInput | null {
  const spec = destinationTypes[choice.type];
  if (spec === undefined) return null;
  const filled = spec.fields
    .map((field) => [field.name, choice.fields[field.name]?.trim() ?? ''] as const)
    .filter(([name, value]) => value !== '' || !spec.fields.find((f) => f.name === name)?.optional);
  return { type: choice.type, ...Object.fromEntries(filled) } as DestinationInput;
}

/** The destination type select, and the fields of a broker type (the callback URL is the form's own). */
export function DestinationFields({
  choice,
  onChange,
  problem,
}: {
  choice: DestinationChoice;
  onChange: (choice: DestinationChoice) => void;
  problem: Problem | undefined;
}) {
  const spec = destinationTypes[choice.type];
  return (
    <>
      <Field
        id="destination-type"
        label="Deliver to"
        hint="An HTTPS callback in your application, or a queue, topic, bus, stream or bucket your operator lets you name."
        error={fieldError(problem, '/destination/type')}
      >
        {(attributes) => (
          <select
            {...attributes}
            value={choice.type}
            onChange={(e) => onChange({ type: e.currentTarget.value, fields: {} })}
          >
            <option value="http">HTTP callback</option>
            {Object.entries(destinationTypes).map(([type, { label }]) => (
              <option key={type} value={type}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {spec?.fields.map((field) => (
        <Field
          key={field.name}
          id={`destination-${field.name}`}
          label={field.label}
          hint={field.hint}
          error={fieldError(problem, `/destination/${field.name}`)}
        >
          {(attributes) => (
            <input
              {...attributes}
              type="text"
              required={field.optional !== true}
              spellcheck={false}
              value={choice.fields[field.name] ?? ''}
              onInput={(e) =>
                onChange({ ...choice, fields: { ...choice.fields, [field.name]: e.currentTarget.value } })
              }
            />
          )}
        </Field>
      ))}
    </>
  );
}
