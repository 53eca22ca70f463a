/**
 * The AWS destinations of an `aws` broker entry: what a subscription names (`sqs`, `sns`,
 * `eventbridge`, `kinesis`, `s3`), how it is checked, stored in `callback_url` and shown, and the pure
 * rules of a write: the key a field of the payload gives (RFC 6901 JSON Pointer), an S3 object's key,
 * and the envelope EventBridge and Kinesis carry. Name rules are AWS's: "Amazon SQS queue and message
 * identifiers", SNS `CreateTopic`, EventBridge `PutEvents` and "Amazon EventBridge quotas", Kinesis
 * `CreateStream`, S3 "General purpose bucket naming rules" and "Naming Amazon S3 objects".
 */
import type { AwsCredentialsInput } from './aws-credentials.js';

/**
 * An AWS destination as the API takes and shows it (snake_case); optional fields are left out when
 * unset. `credentials` (customer-owned, `aws-credentials.ts`) is stored apart from its URI.
 */
export type AwsDestinationInput = (
  | { type: 'sqs'; broker: string; queue: string; message_group?: string }
  | { type: 'sns'; broker: string; topic_arn: string; message_group?: string }
  | { type: 'eventbridge'; broker: string; event_bus: string; source?: string }
  | { type: 'kinesis'; broker: string; stream: string; partition_key?: string }
  | { type: 's3'; broker: string; bucket: string; prefix?: string; key?: string }
) & { credentials?: AwsCredentialsInput };

/**
 * An AWS destination as the worker writes to it. `messageGroup` and `partitionKey` are JSON Pointers
 * into the payload ('' for the subscription's id); `source` and `key` have their defaults filled in.
 */
export type AwsTarget =
  | { type: 'sqs'; broker: string; queue: string; messageGroup: string }
  | { type: 'sns'; broker: string; topicArn: string; messageGroup: string }
  | { type: 'eventbridge'; broker: string; eventBus: string; source: string }
  | { type: 'kinesis'; broker: string; stream: string; partitionKey: string }
  | { type: 's3'; broker: string; bucket: string; prefix: string; key: string };

/** The AWS destination types. */
export const awsTypes = ['sqs', 'sns', 'eventbridge', 'kinesis', 's3'] as const;
export type AwsType = (typeof awsTypes)[number];

/** Whether `type` is an AWS destination type. */
export function isAwsType(type: string): type is AwsType {
  return (awsTypes as readonly string[]).includes(type);
}

/** An EventBridge entry's `Source` when the subscription names none. */
export const defaultEventSource = 'webhooks';

/** An S3 object's key when the subscription names none. */
export const defaultObjectKey = '{prefix}{yyyy}/{mm}/{dd}/{event_type}/{delivery_id}.json';

/** The placeholders of an S3 key template. */
export const objectKeyFields = [
  'prefix',
  'yyyy',
  'mm',
  'dd',
  'hh',
  'event_type',
  'event_id',
  'delivery_id',
  'subscription_id',
] as const;

/** Longest S3 key template and prefix, in bytes: with the longest values the key stays under S3's 1,024. */
export const maxObjectKeyTemplateBytes = 512;
export const maxObjectPrefixBytes = 256;

/** Longest JSON Pointer naming a message group or partition key, in characters. */
export const maxKeyPointerLength = 256;

const sqsQueue = /^[A-Za-z0-9_-]{1,75}\.fifo$|^[A-Za-z0-9_-]{1,80}$/;
/** `arn:<partition>:sns:<region>:<account>:<topic>` (a topic name of letters, digits, - and _, .fifo allowed). */
const snsTopicArn = /^arn:aws(-[a-z]+)*:sns:([a-z0-9-]+):\d{12}:[A-Za-z0-9_-]{1,251}(\.fifo)?$/;
const eventBusName = /^[A-Za-z0-9._\-/]{1,256}$/;
const eventBusArn = /^arn:aws(-[a-z]+)*:events:([a-z0-9-]+):\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256}$/;
/** Printable ASCII without spaces; `aws.` is AWS's own. */
const eventSource = /^(?!aws\.)[\x21-\x7e]{1,256}$/;
const kinesisStream = /^[A-Za-z0-9_.-]{1,128}$/;
const s3Bucket = /^(?!xn--)(?!sthree-)(?!.*\.\.)(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** RFC 6901: `/`-separated tokens, `~` only as `~0` or `~1`. */
const jsonPointer = /^(\/([^~/]|~[01])*)+$/;
/** Whether `text` holds a control character (C0 or DEL), which S3 keys cannot carry in XML listings. */
const hasControlCharacter = (text: string) =>
  [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/** A refusal naming the field under `/destination`. */
export interface DestinationProblem {
  pointer: string;
  detail: string;
}

const problem = (field: string, detail: string): DestinationProblem => ({
  pointer: `/destination/${field}`,
  detail,
});

/** Why `pointer` cannot name a field of the payload, or null (undefined: not set). */
function keyPointerProblem(field: string, pointer: string | undefined): DestinationProblem | null {
  if (pointer === undefined) return null;
  if (pointer.length > maxKeyPointerLength || !jsonPointer.test(pointer))
    return problem(field, `must be a JSON Pointer into the payload (RFC 6901), such as "/data/call_id"`);
  return null;
}

/** Why the S3 key template or prefix cannot be used, or null. */
function objectKeyProblem(prefix: string, key: string): DestinationProblem | null {
  if (
    Buffer.byteLength(prefix) > maxObjectPrefixBytes ||
    hasControlCharacter(prefix) ||
    prefix.startsWith('/')
  )
    return problem(
      'prefix',
      `must be at most ${maxObjectPrefixBytes} bytes, without control characters, not starting with /`,
    );
  if (Buffer.byteLength(key) > maxObjectKeyTemplateBytes || hasControlCharacter(key) || key.startsWith('/'))
    return problem(
      'key',
      `must be at most ${maxObjectKeyTemplateBytes} bytes, without control characters, not starting with /`,
    );
  const named = [...key.matchAll(/\{([^}]*)\}/g)].map((match) => match[1]!);
  const unknown = named.find((name) => !(objectKeyFields as readonly string[]).includes(name));
  if (unknown !== undefined)
    return problem(
      'key',
      `names {${unknown}}, which is none of ${objectKeyFields.map((f) => `{${f}}`).join(' ')}`,
    );
  if (!named.includes('delivery_id'))
    return problem('key', 'must contain {delivery_id}: one object per delivery, which its retries overwrite');
  return null;
}

/**
 * Checks an AWS destination against its broker's region; the broker itself is checked by the caller.
 * @returns the target, or the problem naming the field under `/destination`
 */
export function checkAwsDestination(
  input: AwsDestinationInput,
  region: string,
): { target: AwsTarget } | DestinationProblem {
  const checked = checkAwsFields(input, region);
  if ('pointer' in checked) return checked;
  if (awsDestinationUrl(checked.target).length <= maxStoredUrlLength) return checked;
  const longest = Object.entries(input)
    .filter(([name]) => name !== 'type' && name !== 'broker')
    .reduce((a, b) => (String(b[1]).length > String(a[1]).length ? b : a));
  return problem(
    longest[0],
    `makes the destination longer than ${maxStoredUrlLength} characters, percent-encoded`,
  );
}

/** Longest stored `callback_url` (the column's length), in characters. */
const maxStoredUrlLength = 2048;

function checkAwsFields(
  input: AwsDestinationInput,
  region: string,
): { target: AwsTarget } | DestinationProblem {
  const inRegion = (arnRegion: string | undefined, field: string) =>
    arnRegion === region ? null : problem(field, `must be in the broker's region ${region}`);
  switch (input.type) {
    case 'sqs': {
      if (!sqsQueue.test(input.queue))
        return problem('queue', 'must be 1 to 80 letters, digits, - and _ (a FIFO queue ending in .fifo)');
      const refused = keyPointerProblem('message_group', input.message_group);
      if (refused !== null) return refused;
      return {
        target: {
          type: 'sqs',
          broker: input.broker,
          queue: input.queue,
          messageGroup: input.message_group ?? '',
        },
      };
    }
    case 'sns': {
      const arn = snsTopicArn.exec(input.topic_arn);
      if (arn === null)
        return problem('topic_arn', 'must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)');
      const refused =
        inRegion(arn[2], 'topic_arn') ?? keyPointerProblem('message_group', input.message_group);
      if (refused !== null) return refused;
      return {
        target: {
          type: 'sns',
          broker: input.broker,
          topicArn: input.topic_arn,
          messageGroup: input.message_group ?? '',
        },
      };
    }
    case 'eventbridge': {
      const arn = eventBusArn.exec(input.event_bus);
      if (arn === null && !eventBusName.test(input.event_bus))
        return problem(
          'event_bus',
          'must be an event bus name or ARN (arn:aws:events:<region>:<account>:event-bus/<name>)',
        );
      if (arn !== null) {
        const refused = inRegion(arn[2], 'event_bus');
        if (refused !== null) return refused;
      }
      const source = input.source ?? defaultEventSource;
      if (!eventSource.test(source))
        return problem(
          'source',
          'must be 1 to 256 printable characters without spaces, not starting with "aws."',
        );
      return { target: { type: 'eventbridge', broker: input.broker, eventBus: input.event_bus, source } };
    }
    case 'kinesis': {
      if (!kinesisStream.test(input.stream))
        return problem('stream', 'must be 1 to 128 letters, digits, _, - and .');
      const refused = keyPointerProblem('partition_key', input.partition_key);
      if (refused !== null) return refused;
      return {
        target: {
          type: 'kinesis',
          broker: input.broker,
          stream: input.stream,
          partitionKey: input.partition_key ?? '',
        },
      };
    }
    case 's3': {
      if (!s3Bucket.test(input.bucket))
        return problem(
          'bucket',
          'must be 3 to 63 lower-case letters, digits, . and -, starting and ending with a letter or digit',
        );
      const prefix = input.prefix ?? '';
      const key = input.key ?? defaultObjectKey;
      const refused = objectKeyProblem(prefix, key);
      if (refused !== null) return refused;
      return { target: { type: 's3', broker: input.broker, bucket: input.bucket, prefix, key } };
    }
  }
}

const part = encodeURIComponent;

/**
 * The stored `callback_url` of an AWS destination: `<type>://<broker>/` and its fields, each
 * percent-encoded, an unset optional one left off (`sqs://<broker>/<queue>[/<message group>]`,
 * `s3://<broker>/<bucket>/<prefix>/<key>`).
 */
export function awsDestinationUrl(target: AwsTarget): string {
  const parts = (() => {
    switch (target.type) {
      case 'sqs':
        return [target.queue, target.messageGroup];
      case 'sns':
        return [target.topicArn, target.messageGroup];
      case 'eventbridge':
        return [target.eventBus, target.source];
      case 'kinesis':
        return [target.stream, target.partitionKey];
      case 's3':
        return [target.bucket, target.prefix, target.key];
    }
  })();
  const kept = target.type === 's3' ? parts : parts.filter((value, i) => i === 0 || value !== '');
  return `${target.type}://${target.broker}/${kept.map(part).join('/')}`;
}

/** The AWS destination of a stored `callback_url` of scheme `type`, decoded (`awsDestinationUrl`'s inverse). */
export function awsTargetOf(type: AwsType, broker: string, parts: readonly string[]): AwsTarget {
  const [first = '', second = '', third = ''] = parts;
  switch (type) {
    case 'sqs':
      return { type, broker, queue: first, messageGroup: second };
    case 'sns':
      return { type, broker, topicArn: first, messageGroup: second };
    case 'eventbridge':
      return { type, broker, eventBus: first, source: second || defaultEventSource };
    case 'kinesis':
      return { type, broker, stream: first, partitionKey: second };
    case 's3':
      return { type, broker, bucket: first, prefix: second, key: third || defaultObjectKey };
  }
}

/** The API's view of an AWS destination: defaults shown, an unset key field left out. */
export function awsDestinationView(target: AwsTarget): AwsDestinationInput {
  const { broker } = target;
  const keyed = <K extends string>(name: K, pointer: string) =>
    (pointer === '' ? {} : { [name]: pointer }) as Partial<Record<K, string>>;
  switch (target.type) {
    case 'sqs':
      return { type: 'sqs', broker, queue: target.queue, ...keyed('message_group', target.messageGroup) };
    case 'sns':
      return {
        type: 'sns',
        broker,
        topic_arn: target.topicArn,
        ...keyed('message_group', target.messageGroup),
      };
    case 'eventbridge':
      return { type: 'eventbridge', broker, event_bus: target.eventBus, source: target.source };
    case 'kinesis':
      return {
        type: 'kinesis',
        broker,
        stream: target.stream,
        ...keyed('partition_key', target.partitionKey),
      };
    case 's3':
      return { type: 's3', broker, bucket: target.bucket, prefix: target.prefix, key: target.key };
  }
}

/** Longest key a payload field gives, in characters: Kinesis' partition key (SQS's group id is 128). */
const maxPickedKeyLength = { partition: 256, group: 128 } as const;

/**
 * The message group or partition key of one write: the string or number at JSON Pointer `pointer`
 * (RFC 6901) in the JSON `body`, or `fallback` (the subscription's id) when `pointer` is '', the body
 * is not JSON, or the value is missing, not a string or number, empty or longer than `kind` allows.
 */
export function keyFromPayload(
  body: string,
  pointer: string,
  fallback: string,
  kind: keyof typeof maxPickedKeyLength,
): string {
  if (pointer === '') return fallback;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return fallback;
  }
  for (const token of pointer.slice(1).split('/')) {
    const name = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return fallback;
    value = (value as Record<string, unknown>)[name];
  }
  const key = typeof value === 'string' || typeof value === 'number' ? String(value) : '';
  return key === '' || key.length > maxPickedKeyLength[kind] ? fallback : key;
}

/** What an S3 key's placeholders are filled from. */
export interface ObjectKeyValues {
  prefix: string;
  /** The event's time: `{yyyy}` … `{hh}` in UTC, the same on every retry. */
  occurredAt: Date;
  eventType: string;
  eventId: string;
  deliveryId: string;
  subscriptionId: string;
}

/** The S3 key of one delivery: `template` ({@link defaultObjectKey}'s placeholders) filled from `values`. */
export function objectKey(template: string, values: ObjectKeyValues): string {
  const iso = values.occurredAt.toISOString();
  const fields: Record<(typeof objectKeyFields)[number], string> = {
    prefix: values.prefix,
    yyyy: iso.slice(0, 4),
    mm: iso.slice(5, 7),
    dd: iso.slice(8, 10),
    hh: iso.slice(11, 13),
    event_type: values.eventType,
    event_id: values.eventId,
    delivery_id: values.deliveryId,
    subscription_id: values.subscriptionId,
  };
  return template.replace(/\{([a-z_]+)\}/g, (whole, name: string) =>
    Object.hasOwn(fields, name) ? fields[name as keyof typeof fields] : whole,
  );
}

/**
 * What an EventBridge entry's `Detail` and a Kinesis record's data hold, neither having attributes:
 * `{"metadata": {<headers>, "webhook-delivery-id"}, "payload": <the body>}`, the body parsed when it
 * is JSON (so rules match its fields), else as a string. A verifier signs `JSON.stringify(payload)`,
 * which is the body as sent, or the string itself.
 */
export function awsEnvelope(body: string, metadata: Record<string, string>): string {
  let payload: unknown = body;
  try {
    const parsed: unknown = JSON.parse(body);
    if (JSON.stringify(parsed) === body) payload = parsed;
  } catch {
    // Not JSON: carried as the string it is.
  }
  return JSON.stringify({ metadata, payload });
}
