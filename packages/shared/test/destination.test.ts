import { describe, expect, it } from '@jest/globals';
import {
  brokerCapHost,
  brokerTarget,
  checkDestination,
  destinationOf,
  destinationUrl,
  parseDestinationBrokers,
} from '../src/destination.js';

const brokers = parseDestinationBrokers(
  JSON.stringify({
    orders: { type: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:5672' },
    events: { type: 'nats', url: 'nats://127.0.0.1:4222' },
    aws: { type: 'aws', region: 'eu-west-1' },
  }),
);

describe('DESTINATION_BROKERS', () => {
  it('names each broker with its type and URL; unset or empty names none', () => {
    expect([...brokers.keys()]).toEqual(['orders', 'events', 'aws']);
    expect(brokers.get('events')).toEqual({ type: 'nats', url: 'nats://127.0.0.1:4222' });
    // An AWS entry's endpoint is the SDK's own unless it names one.
    expect(brokers.get('aws')).toEqual({ type: 'aws', region: 'eu-west-1', url: '' });
    expect(parseDestinationBrokers(undefined).size).toBe(0);
    expect(parseDestinationBrokers(' ').size).toBe(0);
  });

  it.each([
    ['{', /not JSON/],
    ['[]', /must be an object/],
    ['{"Orders": {"type": "nats", "url": "nats://h:4222"}}', /broker name "Orders"/],
    ['{"o": {"type": "kafka", "url": "kafka://h"}}', /broker o: type must be/],
    ['{"o": {"type": "rabbitmq", "url": "nats://h:4222"}}', /starts with amqp: or amqps:/],
    ['{"o": {"type": "nats"}}', /url is not a URL/],
    ['{"o": {"type": "aws"}}', /names its "region"/],
    [
      '{"o": {"type": "aws", "region": "eu-west-1", "endpoint": "ftp://h"}}',
      /endpoint starts with https: or http:/,
    ],
  ])('refuses %s with one line naming the variable', (raw, why) => {
    expect(() => parseDestinationBrokers(raw)).toThrow(/^Invalid environment variable DESTINATION_BROKERS: /);
    expect(() => parseDestinationBrokers(raw)).toThrow(why);
  });
});

describe('a broker destination stored as its URI', () => {
  it.each([
    { type: 'rabbitmq' as const, broker: 'orders', exchange: 'web hooks/x', routingKey: 'order.created' },
    { type: 'rabbitmq' as const, broker: 'orders', exchange: '', routingKey: '' },
    { type: 'nats' as const, broker: 'events', subject: 'acct-1.orders.created' },
    { type: 'sqs' as const, broker: 'aws', queue: 'orders.fifo', messageGroup: '' },
    { type: 'sqs' as const, broker: 'aws', queue: 'orders.fifo', messageGroup: '/data/call id~1x' },
    {
      type: 'sns' as const,
      broker: 'aws',
      topicArn: 'arn:aws:sns:eu-west-1:123456789012:orders.fifo',
      messageGroup: '',
    },
    { type: 'eventbridge' as const, broker: 'aws', eventBus: 'default', source: 'com.example/hooks' },
    { type: 'kinesis' as const, broker: 'aws', stream: 'calls', partitionKey: '/data/call_id' },
    { type: 's3' as const, broker: 'aws', bucket: 'hooks.example', prefix: '', key: '{delivery_id}.json' },
    {
      type: 's3' as const,
      broker: 'aws',
      bucket: 'hooks.example',
      prefix: 'a/b/',
      key: 'x/{yyyy}/{delivery_id}',
    },
  ])('reads back as it was written: %j', (target) => {
    expect(brokerTarget(destinationUrl(target))).toEqual(target);
  });

  it('is no broker destination for an http(s) callback, which the API shows as http', () => {
    expect(brokerTarget('https://client.example/hooks')).toBeNull();
    expect(destinationOf('http://client.example/nats://x')).toEqual({ type: 'http' });
    expect(destinationOf('nats://events/a.b')).toEqual({ type: 'nats', broker: 'events', subject: 'a.b' });
  });

  it('has the host cap of its broker, apart from any callback host', () => {
    expect(brokerCapHost({ type: 'nats', broker: 'events', subject: 'a' })).toBe('nats:events');
  });
});

describe('a destination checked at create time', () => {
  it('takes an SQS queue name of 1-80 letters, digits, - and _, or a FIFO one ending .fifo', () => {
    for (const queue of ['orders', 'a'.repeat(80), `${'b'.repeat(75)}.fifo`, 'my_queue-1'])
      expect(checkDestination({ type: 'sqs', broker: 'aws', queue }, brokers, 'a')).toEqual({
        target: { type: 'sqs', broker: 'aws', queue, messageGroup: '' },
      });
    for (const queue of ['', 'a'.repeat(81), 'has space', 'dot.ted', `${'b'.repeat(76)}.fifo`])
      expect(checkDestination({ type: 'sqs', broker: 'aws', queue }, brokers, 'a')).toMatchObject({
        pointer: '/destination/queue',
      });
  });

  it("takes an SNS topic ARN of the broker's region", () => {
    const arn = 'arn:aws:sns:eu-west-1:123456789012:orders';
    expect(checkDestination({ type: 'sns', broker: 'aws', topic_arn: arn }, brokers, 'a')).toEqual({
      target: { type: 'sns', broker: 'aws', topicArn: arn, messageGroup: '' },
    });
    for (const topic_arn of [
      'orders',
      'arn:aws:sqs:eu-west-1:123456789012:orders',
      arn.replace('eu-west-1', 'us-east-1'),
    ])
      expect(checkDestination({ type: 'sns', broker: 'aws', topic_arn }, brokers, 'a')).toMatchObject({
        pointer: '/destination/topic_arn',
      });
  });

  it('takes a broker of its type and valid names', () => {
    expect(
      checkDestination(
        { type: 'rabbitmq', broker: 'orders', exchange: 'hooks', routing_key: 'k' },
        brokers,
        'acct-1',
      ),
    ).toEqual({ target: { type: 'rabbitmq', broker: 'orders', exchange: 'hooks', routingKey: 'k' } });
  });

  it.each([
    [{ type: 'nats' as const, broker: 'missing', subject: 'a' }, '/destination/broker', /no nats broker/],
    [
      { type: 'nats' as const, broker: 'orders', subject: 'a' },
      '/destination/broker',
      /is a rabbitmq broker/,
    ],
    [{ type: 'nats' as const, broker: 'events', subject: 'a.*' }, '/destination/subject', /wildcards/],
    [{ type: 'nats' as const, broker: 'events', subject: 'a..b' }, '/destination/subject', /dot-separated/],
    [{ type: 'nats' as const, broker: 'events', subject: 'a b' }, '/destination/subject', /whitespace/],
    [
      { type: 'rabbitmq' as const, broker: 'orders', exchange: 'é'.repeat(128), routing_key: '' },
      '/destination/exchange',
      /255 bytes/,
    ],
  ])('refuses %j naming the field', (input, pointer, detail) => {
    const checked = checkDestination(input, brokers, 'acct-1');
    expect(checked).toMatchObject({ pointer });
    expect('detail' in checked && checked.detail).toMatch(detail);
  });

  it('says when the deployment has no broker at all', () => {
    expect(
      checkDestination({ type: 'nats', broker: 'events', subject: 'a' }, new Map(), 'acct-1'),
    ).toMatchObject({
      detail: expect.stringMatching(/has none for this account \(DESTINATION_BROKERS\)/),
    });
  });

  it("reads a broker kept for other accounts as one that does not exist, and names only the account's", () => {
    const kept = parseDestinationBrokers(
      JSON.stringify({
        shared: { type: 'nats', url: 'nats://h:4222' },
        acme: { type: 'nats', url: 'nats://acme:4222', accounts: ['acct-acme'] },
      }),
    );
    const input = { type: 'nats' as const, broker: 'acme', subject: 'a' };
    expect(checkDestination(input, kept, 'acct-acme')).toEqual({
      target: { type: 'nats', broker: 'acme', subject: 'a' },
    });
    expect(checkDestination(input, kept, 'acct-other')).toEqual({
      pointer: '/destination/broker',
      detail: 'names no nats broker of this deployment (shared)',
    });
    expect(() =>
      parseDestinationBrokers('{"a": {"type": "nats", "url": "nats://h", "accounts": "x"}}'),
    ).toThrow(/broker a: accounts must be a list of account ids/);
  });
});
