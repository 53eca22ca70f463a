/**
 * The EventBridge, Kinesis and S3 destinations through the real API, worker, PostgreSQL, Redis and an
 * AWS API of the test's own (moto): each delivery is one entry, record or object that a consumer can
 * verify as an HTTP receiver does; a retried delivery overwrites its own S3 object (a proxy loses S3's
 * first answer); a missing bus, stream or bucket fails the attempts naming it and opens the breaker after its run of failures; a
 * throttle (from a stand-in Kinesis endpoint, moto cannot throttle) is retried and not counted by the breaker.
 */
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateStreamCommand,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
} from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Webhook } from 'standardwebhooks';
import { startMoto, type Moto } from '../scripts/lib/moto.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { deliveryAttempted, startAwsProxy, type AwsProxy, type ProxyDecision } from './support/aws.js';
import { waitFor } from '../scripts/lib/wait.js';

const region = 'eu-west-1';
let moto: Moto;
let stack: TestStack;
let sqs: SQSClient;
let events: EventBridgeClient;
let kinesis: KinesisClient;
let s3: S3Client;

/** A stand-in Kinesis endpoint (nothing reaches moto): throttles its first `throttles` writes, then accepts each. */
let throttles = 3;
let writesSeen = 0;
const throttle = (): ProxyDecision => {
  writesSeen += 1;
  const contentType = 'application/x-amz-json-1.1';
  return writesSeen <= throttles
    ? {
        kind: 'answer',
        status: 400,
        contentType,
        body: JSON.stringify({ __type: 'ProvisionedThroughputExceededException', message: 'Rate exceeded' }),
      }
    : {
        kind: 'answer',
        status: 200,
        contentType,
        body: JSON.stringify({ ShardId: 'shardId-000000000000', SequenceNumber: String(writesSeen) }),
      };
};

/**
 * Loses S3's answer to the first write after moto stored it (the worker reads a 500), as a connection
 * lost after the write would: the delivery's next attempt writes it again.
 */
let answersLost = 0;
const loseFirstAnswer = (request: IncomingMessage): ProxyDecision => {
  if (request.method !== 'PUT' || answersLost > 0) return { kind: 'forward' };
  answersLost += 1;
  return {
    kind: 'forward',
    lose: (response) => {
      response.writeHead(500, { 'content-type': 'application/xml' });
      response.end('<Error><Code>InternalError</Code><Message>lost</Message></Error>');
    },
  };
};
let proxies: AwsProxy[] = [];

beforeAll(async () => {
  moto = await startMoto();
  const settings = { region, endpoint: moto.url };
  sqs = new SQSClient(settings);
  events = new EventBridgeClient(settings);
  kinesis = new KinesisClient({ ...settings, requestHandler: new NodeHttpHandler() });
  s3 = new S3Client({ ...settings, forcePathStyle: true });
  proxies = [
    await startAwsProxy(() => moto.url, throttle),
    await startAwsProxy(() => moto.url, loseFirstAnswer),
  ];
  stack = await startTestStack('aws-cloud', {
    DESTINATION_BROKERS: JSON.stringify({
      aws: { type: 'aws', region, endpoint: moto.url },
      throttled: { type: 'aws', region, endpoint: proxies[0]!.url },
      'answer-lost': { type: 'aws', region, endpoint: proxies[1]!.url },
    }),
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '5',
    BREAKER_FAILURES_IN_ROW: '3',
  });
}, 60_000);
afterAll(async () => {
  await stack.close();
  for (const client of [sqs, events, kinesis, s3]) client.destroy();
  await moto.stop();
  for (const proxy of proxies) await proxy.close();
});

/** The delivery of `subscriptionId`'s only event once it is `status`, with its attempts. */
const deliveryOnce = (subscriptionId: string, status: string) =>
  waitFor(`the delivery ${status}`, async () => {
    const row = await stack.worker.prisma.delivery.findFirst({
      where: { subscriptionId, event: { type: 'call.completed' } },
      include: { attempts: { orderBy: { attemptNumber: 'asc' } } },
    });
    return row?.status === status && row;
  });

/** A stack API GET as `account`. */
const read = async (account: string, url: string) =>
  (await stack.api.app.inject({ url, headers: stack.api.auth(account) })).json();

/** What EventBridge and Kinesis carry: the headers and the payload. */
interface Envelope {
  metadata: Record<string, string>;
  payload: unknown;
}

describe('an eventbridge destination', () => {
  it('puts one event per delivery: the event type as its detail type, the payload and signed headers as its detail', async () => {
    await events.send(new CreateEventBusCommand({ Name: 'wh-bus' }));
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'wh-from-bus' }))).QueueUrl!;
    const queueArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    await events.send(
      new PutRuleCommand({
        Name: 'wh-calls',
        EventBusName: 'wh-bus',
        EventPattern: JSON.stringify({ source: ['com.example.hooks'], 'detail-type': ['call.completed'] }),
      }),
    );
    await events.send(
      new PutTargetsCommand({
        Rule: 'wh-calls',
        EventBusName: 'wh-bus',
        Targets: [{ Id: 'q', Arn: queueArn }],
      }),
    );
    const sub = await stack.subscribe('acct-eventbridge', {
      destination: { type: 'eventbridge', broker: 'aws', event_bus: 'wh-bus', source: 'com.example.hooks' },
    });
    expect(sub.destination).toEqual({
      type: 'eventbridge',
      broker: 'aws',
      event_bus: 'wh-bus',
      source: 'com.example.hooks',
    });
    const { id } = await stack.publisher.publish({
      accountId: 'acct-eventbridge',
      type: 'call.completed',
      data: { call_id: 'eb-1', caller: 'Zoë' },
    });
    const message = await waitFor('the event routed to the queue', async () => {
      const answer = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
      const [first] = answer.Messages ?? [];
      if (first !== undefined)
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: first.ReceiptHandle! }));
      return first;
    });
    const event = JSON.parse(message.Body!) as { 'detail-type': string; source: string; detail: Envelope };
    expect(event).toMatchObject({ 'detail-type': 'call.completed', source: 'com.example.hooks' });
    const { metadata, payload } = event.detail;
    expect(metadata['webhook-id']).toBe(id);
    expect(new Webhook(sub.secret).verify(JSON.stringify(payload), metadata)).toMatchObject({
      data: { call_id: 'eb-1', caller: 'Zoë' },
    });
    const delivery = await deliveryOnce(sub.id, 'succeeded');
    expect(metadata['webhook-delivery-id']).toBe(delivery.id);
  });

  it('fails the attempts on a bus that does not exist, naming it, and opens the breaker after its run', async () => {
    const account = 'acct-eventbridge-missing';
    const sub = await stack.subscribe(account, {
      destination: { type: 'eventbridge', broker: 'aws', event_bus: 'wh-nobody' },
    });
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    await waitFor(
      'the breaker open',
      async () => (await read(account, `/api/webhooks/${sub.id}`)).delivery.breaker.state === 'open',
    );
    const { attempts } = (await stack.worker.prisma.delivery.findFirst({
      where: { subscriptionId: sub.id, event: { type: 'call.completed' } },
      include: { attempts: true },
    }))!;
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    for (const attempt of attempts)
      expect(attempt).toMatchObject({
        errorClass: 'broker_refused',
        errorMessage: `EventBridge has no event bus named "wh-nobody" in ${region}`,
      });
  });
});

/** The records of `stream`'s only shard so far. */
async function records(stream: string) {
  const { StreamDescription } = await kinesis.send(new DescribeStreamCommand({ StreamName: stream }));
  const { ShardIterator } = await kinesis.send(
    new GetShardIteratorCommand({
      StreamName: stream,
      ShardId: StreamDescription!.Shards![0]!.ShardId!,
      ShardIteratorType: 'TRIM_HORIZON',
    }),
  );
  return (await kinesis.send(new GetRecordsCommand({ ShardIterator }))).Records ?? [];
}

describe('a kinesis destination', () => {
  it('puts one record per delivery, keyed by the subscription or by the field it names', async () => {
    await kinesis.send(new CreateStreamCommand({ StreamName: 'wh-calls', ShardCount: 1 }));
    await waitFor('the stream active', async () => {
      const { StreamDescription } = await kinesis.send(new DescribeStreamCommand({ StreamName: 'wh-calls' }));
      return StreamDescription?.StreamStatus === 'ACTIVE';
    });
    const bySubscription = await stack.subscribe('acct-kinesis', {
      destination: { type: 'kinesis', broker: 'aws', stream: 'wh-calls' },
    });
    const byCall = await stack.subscribe('acct-kinesis', {
      destination: { type: 'kinesis', broker: 'aws', stream: 'wh-calls', partition_key: '/data/call_id' },
    });
    await stack.publisher.publish({
      accountId: 'acct-kinesis',
      type: 'call.completed',
      data: { call_id: 'k-9' },
    });
    const stored = await waitFor('both records', async () => {
      const found = await records('wh-calls');
      return found.length === 2 && found;
    });
    const envelopes = stored.map((record) => ({
      key: record.PartitionKey,
      ...(JSON.parse(Buffer.from(record.Data!).toString()) as Envelope),
    }));
    expect(envelopes.map((e) => e.key).sort()).toEqual([bySubscription.id, 'k-9'].sort());
    for (const { key, metadata, payload } of envelopes) {
      const secret = key === 'k-9' ? byCall.secret : bySubscription.secret;
      expect(new Webhook(secret).verify(JSON.stringify(payload), metadata)).toMatchObject({
        data: { call_id: 'k-9' },
      });
    }
  });

  it('retries a throttled write with the backoff, the breaker not counting the throttles', async () => {
    const account = 'acct-kinesis-throttled';
    writesSeen = 0;
    throttles = 3;
    const sub = await stack.subscribe(account, {
      destination: { type: 'kinesis', broker: 'throttled', stream: 'busy' },
    });
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    const delivery = await deliveryOnce(sub.id, 'succeeded');
    // Three throttles in a row are BREAKER_FAILURES_IN_ROW failures: counted, they would have opened it.
    expect(delivery.attempts.map((a) => a.errorClass)).toEqual([
      'broker_throttled',
      'broker_throttled',
      'broker_throttled',
      null,
    ]);
    expect(delivery.attempts[0]!.errorMessage).toBe(
      'Kinesis throttled the write to stream "busy" (ProvisionedThroughputExceededException)',
    );
    expect((await read(account, `/api/webhooks/${sub.id}`)).delivery.breaker).toMatchObject({
      state: 'closed',
    });
  });
});

describe('an s3 destination', () => {
  it('writes one object per delivery, the payload byte for byte, its headers as metadata', async () => {
    await s3.send(
      new CreateBucketCommand({
        Bucket: 'wh-archive',
        CreateBucketConfiguration: { LocationConstraint: region },
      }),
    );
    const account = 'acct-s3';
    const sub = await stack.subscribe(account, {
      destination: { type: 's3', broker: 'aws', bucket: 'wh-archive', prefix: 'hooks/' },
    });
    const { id } = await stack.publisher.publish({
      accountId: account,
      type: 'call.completed',
      data: { call_id: 's-1' },
    });
    const delivery = await deliveryOnce(sub.id, 'succeeded');
    // The event's day (UTC), from its UUIDv7's milliseconds.
    const day = new Date(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toISOString().slice(0, 10);
    const key = `hooks/${day.replaceAll('-', '/')}/call.completed/${delivery.id}.json`;
    const object = await s3.send(new GetObjectCommand({ Bucket: 'wh-archive', Key: key }));
    const body = await object.Body!.transformToString();
    expect(object.ContentType).toBe('application/json');
    expect(object.Metadata?.['webhook-delivery-id']).toBe(delivery.id);
    expect(new Webhook(sub.secret).verify(body, object.Metadata!)).toMatchObject({
      data: { call_id: 's-1' },
    });
  });

  it('writes a retried delivery over its own object: one object for two attempts', async () => {
    await s3.send(
      new CreateBucketCommand({
        Bucket: 'wh-retried',
        CreateBucketConfiguration: { LocationConstraint: region },
      }),
    );
    const account = 'acct-s3-retried';
    const sub = await stack.subscribe(account, {
      destination: { type: 's3', broker: 'answer-lost', bucket: 'wh-retried', key: '{delivery_id}.json' },
    });
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: {} });
    const delivery = await deliveryOnce(sub.id, 'succeeded');
    expect(delivery.attempts.map((a) => a.errorClass)).toEqual(['broker_unavailable', null]);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'wh-retried' }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual([`${delivery.id}.json`]);
  });

  it('fails the attempts on a bucket that does not exist, naming it', async () => {
    const sub = await stack.subscribe('acct-s3-missing', {
      destination: { type: 's3', broker: 'aws', bucket: 'wh-nobody' },
    });
    await stack.publisher.publish({ accountId: 'acct-s3-missing', type: 'call.completed', data: {} });
    const delivery = await deliveryAttempted(stack, sub.id);
    expect(delivery.attempts[0]).toMatchObject({
      errorClass: 'broker_refused',
      errorMessage: `S3 has no bucket named "wh-nobody" in ${region}`,
    });
  });

  it.each([
    [{ type: 's3', broker: 'aws', bucket: 'Not_A_Bucket' }, '/destination/bucket'],
    [{ type: 's3', broker: 'aws', bucket: 'wh-archive', key: '{event_id}.json' }, '/destination/key'],
    [
      { type: 'kinesis', broker: 'aws', stream: 'wh-calls', partition_key: 'data.call_id' },
      '/destination/partition_key',
    ],
    [
      { type: 'eventbridge', broker: 'aws', event_bus: 'default', source: 'aws.events' },
      '/destination/source',
    ],
  ])('refuses %j with problem details naming %s', async (destination, pointer) => {
    const answer = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('acct-aws-bad'),
      payload: { destination },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  });
});
