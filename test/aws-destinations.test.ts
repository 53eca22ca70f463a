/**
 * The Amazon SQS and SNS destinations through the real API, worker, PostgreSQL, Redis and an AWS API of the
 * test's own (moto): a delivery becomes one message whose body is the signed payload and whose
 * attributes carry the Standard Webhooks headers, verifiable as an HTTP receiver verifies them; on a
 * FIFO queue the group is the subscription and the deduplication id the delivery, and an ordered
 * subscription's messages arrive in acceptance order; a queue that does
 * not exist fails the attempts, naming it; a bad queue name or an unknown broker is refused at create.
 * An SNS topic's messages reach a queue subscribed to it (raw delivery) the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateQueueCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { Webhook } from 'standardwebhooks';
import { startMoto, type Moto } from '../scripts/lib/moto.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { receiveMessages } from './support/aws.js';
import { waitFor } from '../scripts/lib/wait.js';

let moto: Moto;
let stack: TestStack;
let sqs: SQSClient;
let sns: SNSClient;

beforeAll(async () => {
  moto = await startMoto();
  sqs = new SQSClient({ region: 'eu-west-1', endpoint: moto.url });
  sns = new SNSClient({ region: 'eu-west-1', endpoint: moto.url });
  stack = await startTestStack('sqs', {
    DESTINATION_BROKERS: JSON.stringify({ aws: { type: 'aws', region: 'eu-west-1', endpoint: moto.url } }),
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
  });
}, 60_000);
afterAll(async () => {
  await stack.close();
  sqs.destroy();
  sns.destroy();
  await moto.stop();
});

/** Creates queue `name` (FIFO when it ends in `.fifo`); returns its URL. */
async function createQueue(name: string): Promise<string> {
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      ...(name.endsWith('.fifo') ? { Attributes: { FifoQueue: 'true' } } : {}),
    }),
  );
  return created.QueueUrl!;
}

/** The messages of queue `url`, each deleted once read, once `count` arrived. */
const receive = (url: string, count: number) => receiveMessages(sqs, url, count);

/** A message's attributes as the headers a verifier takes. */
const headersOf = (message: Message) =>
  Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue ?? '']),
  );

describe('an sqs destination', () => {
  it('sends the signed payload with its Standard Webhooks headers as attributes, confirmed once SQS accepts it', async () => {
    const url = await createQueue('wh-orders');
    const sub = await stack.subscribe('acct-sqs', {
      destination: { type: 'sqs', broker: 'aws', queue: 'wh-orders' },
    });
    expect(sub).toMatchObject({
      destination: { type: 'sqs', broker: 'aws', queue: 'wh-orders' },
      callback_url: 'sqs://aws/wh-orders',
    });
    const { id } = await stack.publisher.publish({
      accountId: 'acct-sqs',
      type: 'call.completed',
      data: { call_id: 'q-1' },
    });
    const [message] = await receive(url, 1);
    const headers = headersOf(message!);
    expect(headers['webhook-id']).toBe(id);
    expect(new Webhook(sub.secret).verify(message!.Body!, headers)).toMatchObject({
      type: 'call.completed',
      data: { call_id: 'q-1' },
    });
    const delivery = await waitFor('the delivery confirmed', async () => {
      const row = await stack.worker.prisma.delivery.findFirst({ where: { subscriptionId: sub.id } });
      return row?.status === 'succeeded' && row;
    });
    expect(headers['webhook-delivery-id']).toBe(delivery.id);
  });

  it("groups a FIFO queue's messages by subscription and deduplicates them by delivery", async () => {
    const url = await createQueue('wh-ordered.fifo');
    const sub = await stack.subscribe('acct-sqs-fifo', {
      destination: { type: 'sqs', broker: 'aws', queue: 'wh-ordered.fifo' },
    });
    for (let n = 0; n < 3; n += 1)
      await stack.publisher.publish({ accountId: 'acct-sqs-fifo', type: 'call.completed', data: { n } });
    const messages = await receive(url, 3);
    const deliveries = await stack.worker.prisma.delivery.findMany({ where: { subscriptionId: sub.id } });
    for (const message of messages) {
      expect(message.Attributes?.MessageGroupId).toBe(sub.id);
      expect(deliveries.map((d) => d.id)).toContain(message.Attributes?.MessageDeduplicationId);
    }
  });

  it('delivers an ordered subscription into a FIFO queue in acceptance order, published concurrently', async () => {
    const url = await createQueue('wh-in-order.fifo');
    const account = 'acct-sqs-in-order';
    await stack.subscribe(account, {
      destination: { type: 'sqs', broker: 'aws', queue: 'wh-in-order.fifo' },
      ordering: 'fifo',
    });
    const published = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        stack.publisher.publish({ accountId: account, type: 'call.completed', data: { n } }),
      ),
    );
    // Acceptance order is the events' ids' (UUIDv7) order.
    const accepted = published.map((event) => event.id).sort();
    const messages = await receive(url, 12);
    expect(messages.map((message) => headersOf(message)['webhook-id'])).toEqual(accepted);
  });

  it('fails the attempts of a queue that does not exist, naming it', async () => {
    const sub = await stack.subscribe('acct-sqs-missing', {
      destination: { type: 'sqs', broker: 'aws', queue: 'wh-nobody' },
    });
    await stack.publisher.publish({ accountId: 'acct-sqs-missing', type: 'call.completed', data: {} });
    const delivery = await waitFor('the delivery given up', async () => {
      const row = await stack.worker.prisma.delivery.findFirst({
        where: { subscriptionId: sub.id },
        include: { attempts: true },
      });
      return row?.status === 'failed' && row;
    });
    expect(delivery.attempts[0]).toMatchObject({
      errorClass: 'broker_refused',
      errorMessage: 'SQS has no queue named "wh-nobody" in eu-west-1',
    });
  });

  it.each([
    [{ destination: { type: 'sqs', broker: 'aws', queue: 'has space' } }, '/destination/queue'],
    [{ destination: { type: 'sqs', broker: 'nowhere', queue: 'q' } }, '/destination/broker'],
  ])('refuses %j with problem details naming %s', async (payload, pointer) => {
    const answer = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('acct-sqs-bad'),
      payload,
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  });

  it('publishes to an SNS topic, whose subscribed queue gets the signed payload and its attributes', async () => {
    const queueUrl = await createQueue('wh-from-topic');
    const topic = await sns.send(new CreateTopicCommand({ Name: 'wh-topic' }));
    await sns.send(
      new SubscribeCommand({
        TopicArn: topic.TopicArn!,
        Protocol: 'sqs',
        Endpoint: `arn:aws:sqs:eu-west-1:123456789012:wh-from-topic`,
        Attributes: { RawMessageDelivery: 'true' },
      }),
    );
    const sub = await stack.subscribe('acct-sns', {
      destination: { type: 'sns', broker: 'aws', topic_arn: topic.TopicArn! },
    });
    expect(sub).toMatchObject({ destination: { type: 'sns', broker: 'aws', topic_arn: topic.TopicArn! } });
    await stack.publisher.publish({
      accountId: 'acct-sns',
      type: 'call.completed',
      data: { call_id: 't-1' },
    });
    const [message] = await receive(queueUrl, 1);
    expect(new Webhook(sub.secret).verify(message!.Body!, headersOf(message!))).toMatchObject({
      data: { call_id: 't-1' },
    });
  });

  it('refuses a topic ARN that cannot be one, or of another region, naming /destination/topic_arn', async () => {
    for (const topicArn of ['not-an-arn', 'arn:aws:sns:us-east-1:123456789012:wh-topic']) {
      const answer = await stack.api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: stack.api.auth('acct-sns-bad'),
        payload: { destination: { type: 'sns', broker: 'aws', topic_arn: topicArn } },
      });
      expect(answer.statusCode).toBe(400);
      expect(answer.json().errors[0].pointer).toBe('/destination/topic_arn');
    }
  });
});
