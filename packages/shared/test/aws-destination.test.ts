/** The AWS destinations' pure rules: names checked at create, a key picked from the payload, S3 keys, the envelope. */
import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import {
  awsEnvelope,
  checkAwsDestination,
  defaultObjectKey,
  destinationOf,
  keyFromPayload,
  objectKey,
} from '../src/index.js';

const region = 'eu-west-1';

describe('an AWS destination checked at create time', () => {
  it('takes an EventBridge bus by name or by ARN of the region, and a source not AWS’s own', () => {
    expect(checkAwsDestination({ type: 'eventbridge', broker: 'aws', event_bus: 'default' }, region)).toEqual(
      {
        target: { type: 'eventbridge', broker: 'aws', eventBus: 'default', source: 'webhooks' },
      },
    );
    const arn = 'arn:aws:events:eu-west-1:123456789012:event-bus/orders';
    expect(
      checkAwsDestination(
        { type: 'eventbridge', broker: 'aws', event_bus: arn, source: 'com.example' },
        region,
      ),
    ).toMatchObject({ target: { eventBus: arn, source: 'com.example' } });
    for (const [input, pointer] of [
      [{ event_bus: 'has space' }, '/destination/event_bus'],
      [{ event_bus: arn.replace('eu-west-1', 'us-east-1') }, '/destination/event_bus'],
      [{ event_bus: 'default', source: 'aws.s3' }, '/destination/source'],
      [{ event_bus: 'default', source: 'with space' }, '/destination/source'],
    ] as const)
      expect(checkAwsDestination({ type: 'eventbridge', broker: 'aws', ...input }, region)).toMatchObject({
        pointer,
      });
  });

  it('takes a Kinesis stream name and a partition key that is a JSON Pointer', () => {
    expect(
      checkAwsDestination(
        { type: 'kinesis', broker: 'aws', stream: 'calls', partition_key: '/data/a~1b' },
        region,
      ),
    ).toEqual({ target: { type: 'kinesis', broker: 'aws', stream: 'calls', partitionKey: '/data/a~1b' } });
    expect(checkAwsDestination({ type: 'kinesis', broker: 'aws', stream: 'a/b' }, region)).toMatchObject({
      pointer: '/destination/stream',
    });
    for (const partition_key of ['data.call_id', '/a~2', ''])
      expect(
        checkAwsDestination({ type: 'kinesis', broker: 'aws', stream: 'calls', partition_key }, region),
      ).toMatchObject({ pointer: '/destination/partition_key' });
    expect(
      checkAwsDestination({ type: 'sqs', broker: 'aws', queue: 'q.fifo', message_group: 'x' }, region),
    ).toMatchObject({ pointer: '/destination/message_group' });
  });

  it('takes an S3 bucket by its naming rules and a key template with {delivery_id}', () => {
    expect(checkAwsDestination({ type: 's3', broker: 'aws', bucket: 'hooks.example-1' }, region)).toEqual({
      target: { type: 's3', broker: 'aws', bucket: 'hooks.example-1', prefix: '', key: defaultObjectKey },
    });
    for (const bucket of ['ab', 'Upper', 'a..b', '192.168.1.1', 'xn--abc', '-abc', 'a'.repeat(64)])
      expect(checkAwsDestination({ type: 's3', broker: 'aws', bucket }, region)).toMatchObject({
        pointer: '/destination/bucket',
      });
    for (const [input, pointer, detail] of [
      [{ key: '{event_id}.json' }, '/destination/key', /\{delivery_id\}/],
      [{ key: '{delivery_id}/{secret}' }, '/destination/key', /\{secret\}/],
      [{ key: '/{delivery_id}' }, '/destination/key', /not starting with/],
      [{ prefix: 'a\nb' }, '/destination/prefix', /control/],
    ] as const)
      expect(
        checkAwsDestination({ type: 's3', broker: 'aws', bucket: 'hooks', ...input }, region),
      ).toMatchObject({
        pointer,
        detail: expect.stringMatching(detail),
      });
  });

  it('is refused, naming its longest field, when its stored URI would pass 2,048 characters', () => {
    const key = `{delivery_id}${' '.repeat(499)}`;
    expect(
      checkAwsDestination(
        { type: 's3', broker: 'aws', bucket: 'hooks', prefix: 'é'.repeat(128), key },
        region,
      ),
    ).toMatchObject({ pointer: '/destination/key', detail: expect.stringMatching(/2048 characters/) });
  });

  it('is shown with its defaults filled in and an unset key field left out', () => {
    expect(destinationOf('eventbridge://aws/default/webhooks')).toEqual({
      type: 'eventbridge',
      broker: 'aws',
      event_bus: 'default',
      source: 'webhooks',
    });
    expect(destinationOf('kinesis://aws/calls')).toEqual({ type: 'kinesis', broker: 'aws', stream: 'calls' });
    expect(destinationOf('sqs://aws/q.fifo/%2Fdata%2Fcall_id')).toEqual({
      type: 'sqs',
      broker: 'aws',
      queue: 'q.fifo',
      message_group: '/data/call_id',
    });
  });
});

describe('the key a field of the payload gives', () => {
  const body = JSON.stringify({
    type: 'call.completed',
    data: { call_id: 'c-7', n: 3, 'a/b': 'slash', o: {} },
  });

  it('is the string or number at the pointer, escapes decoded (RFC 6901)', () => {
    expect(keyFromPayload(body, '/data/call_id', 'sub', 'partition')).toBe('c-7');
    expect(keyFromPayload(body, '/data/n', 'sub', 'partition')).toBe('3');
    expect(keyFromPayload(body, '/data/a~1b', 'sub', 'group')).toBe('slash');
  });

  it('is the subscription when unset, missing, not a scalar, too long or the body is not JSON', () => {
    expect(keyFromPayload(body, '', 'sub', 'partition')).toBe('sub');
    expect(keyFromPayload(body, '/data/missing', 'sub', 'partition')).toBe('sub');
    expect(keyFromPayload(body, '/data/o', 'sub', 'partition')).toBe('sub');
    expect(keyFromPayload(body, '/data/call_id/length', 'sub', 'partition')).toBe('sub');
    expect(keyFromPayload(JSON.stringify({ k: 'x'.repeat(129) }), '/k', 'sub', 'group')).toBe('sub');
    expect(keyFromPayload('not json', '/k', 'sub', 'group')).toBe('sub');
  });
});

describe("an S3 object's key", () => {
  it('fills the template from the event’s UTC time and ids, the same on every retry', () => {
    const values = {
      prefix: 'hooks/',
      occurredAt: new Date('2026-03-04T05:06:07.000Z'),
      eventType: 'call.completed',
      eventId: 'e-1',
      deliveryId: 'd-1',
      subscriptionId: 's-1',
    };
    expect(objectKey(defaultObjectKey, values)).toBe('hooks/2026/03/04/call.completed/d-1.json');
    expect(objectKey('{subscription_id}/{hh}/{event_id}-{delivery_id}', values)).toBe('s-1/05/e-1-d-1');
  });
});

describe('the envelope of EventBridge and Kinesis', () => {
  it('carries the headers and the payload parsed, whose JSON text verifies as the body did', () => {
    const webhook = new Webhook(Buffer.from('secret-of-thirty-two-bytes-long!').toString('base64'));
    const body = JSON.stringify({ type: 'call.completed', data: { text: 'é"\\u2028', n: 1.5e300 } });
    const timestamp = new Date();
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': webhook.sign('msg_1', timestamp, body),
    };
    const envelope = JSON.parse(awsEnvelope(body, headers)) as {
      metadata: Record<string, string>;
      payload: unknown;
    };
    expect(envelope.metadata).toEqual(headers);
    expect(webhook.verify(JSON.stringify(envelope.payload), envelope.metadata)).toEqual(JSON.parse(body));
  });

  it('carries a body that is not JSON text as it is, as a string', () => {
    expect(JSON.parse(awsEnvelope('{"a": 1}', {})).payload).toBe('{"a": 1}');
    expect(JSON.parse(awsEnvelope('plain', {})).payload).toBe('plain');
  });
});
