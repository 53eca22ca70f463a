/**
 * Broker destinations that one account cannot turn against another, through the real API, worker,
 * PostgreSQL, Redis, the machine's RabbitMQ and its NATS: the broker's own exchanges and the NATS
 * server's own subjects are refused at creation, naming the field; and an account whose publishes
 * close its channel (403 on `amq.rabbitmq.trace`, allowed here by the operator) does not fail
 * another account's publishes on the same broker.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

const rabbitUrl = 'amqp://guest:guest@127.0.0.1:5672';
const run = randomUUID().slice(0, 8);
const exchange = `wh-isolation-${run}`;
const queue = `wh-isolation-${run}`;
const stream = `WH_ISOLATION_${run}`;
const natsUrl = 'nats://127.0.0.1:4222';

let stack: TestStack;
let rabbit: ChannelModel;
let channel: Channel;
let natsClient: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  rabbit = await amqp.connect(rabbitUrl);
  channel = await rabbit.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, 'order.created');
  natsClient = await connect({ servers: natsUrl });
  jsm = await jetstreamManager(natsClient);
  await jsm.streams.add({ name: stream, subjects: [`wh-isolation-${run}.>`] });
  stack = await startTestStack('destination-isolation', {
    DESTINATION_BROKERS: JSON.stringify({
      orders: { type: 'rabbitmq', url: rabbitUrl },
      prefixed: { type: 'rabbitmq', url: rabbitUrl, exchange_prefix: 'tenant-' },
      traced: { type: 'rabbitmq', url: rabbitUrl, allow_reserved_exchanges: true },
      events: { type: 'nats', url: natsUrl },
    }),
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    // Every refused publish must end its delivery here; the breaker would hold them.
    BREAKER_FAILURES_IN_ROW: '1000',
    BREAKER_MIN_ATTEMPTS: '1000',
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await channel?.deleteQueue(queue).catch(() => undefined);
  await channel?.deleteExchange(exchange).catch(() => undefined);
  await rabbit?.close();
  await jsm?.streams.delete(stream).catch(() => undefined);
  await natsClient?.close();
}, 60_000);

const create = (account: string, destination: Record<string, string>) =>
  stack.api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: stack.api.auth(account),
    payload: { destination },
  });

describe('a broker destination at creation', () => {
  it.each([
    [
      { type: 'rabbitmq', broker: 'orders', exchange: 'amq.rabbitmq.trace', routing_key: 'x' },
      '/destination/exchange',
      /amq\.\*/,
    ],
    [
      { type: 'rabbitmq', broker: 'orders', exchange: '', routing_key: 'some-queue' },
      '/destination/exchange',
      /default exchange/,
    ],
    [
      { type: 'rabbitmq', broker: 'prefixed', exchange: exchange, routing_key: 'x' },
      '/destination/exchange',
      /start with "tenant-"/,
    ],
    [
      { type: 'nats', broker: 'events', subject: '$JS.API.STREAM.DELETE.x' },
      '/destination/subject',
      /server's own subjects/,
    ],
    [
      { type: 'nats', broker: 'events', subject: '$KV.config.key' },
      '/destination/subject',
      /server's own subjects/,
    ],
    [
      { type: 'nats', broker: 'events', subject: '_INBOX.abc' },
      '/destination/subject',
      /server's own subjects/,
    ],
  ])('refuses %j, naming the field, and creates nothing', async (destination, pointer, detail) => {
    const account = `acct-refused-${randomUUID().slice(0, 6)}`;
    const response = await create(account, destination);
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0]).toMatchObject({ pointer, detail: expect.stringMatching(detail) });
    expect(await stack.api.app.prisma.subscription.count({ where: { accountId: account } })).toBe(0);
  });
});

describe('one account’s channel error', () => {
  it('does not fail another account’s publishes on the same broker', async () => {
    const traced = await create('acct-traced', {
      type: 'rabbitmq',
      broker: 'traced',
      exchange: 'amq.rabbitmq.trace',
      routing_key: 'x',
    });
    expect(traced.statusCode).toBe(201);
    const neighbour = await create('acct-neighbour', {
      type: 'rabbitmq',
      broker: 'traced',
      exchange,
      routing_key: 'order.created',
    });
    expect(neighbour.statusCode).toBe(201);
    const events = 5;
    for (let i = 0; i < events; i++) {
      await stack.publisher.publish({ accountId: 'acct-traced', type: 'call.completed', data: { i } });
      await stack.publisher.publish({ accountId: 'acct-neighbour', type: 'call.completed', data: { i } });
    }
    const rows = async (subscriptionId: string) =>
      stack.worker.prisma.delivery.findMany({
        where: { subscriptionId },
        select: { id: true, status: true, lastError: true, attemptsMade: true },
      });
    await waitFor('every delivery of both accounts ended', async () => {
      const all = [...(await rows(traced.json().id)), ...(await rows(neighbour.json().id))];
      return all.length === 2 * events && all.every((d) => d.status !== 'pending');
    });
    const own = await rows(neighbour.json().id);
    // Each of the neighbour's messages went out on its first attempt.
    expect(own.map((d) => [d.status, d.attemptsMade])).toEqual(Array(events).fill(['succeeded', 1]));
    const refused = await rows(traced.json().id);
    expect(refused.every((d) => d.status === 'failed')).toBe(true);
    expect(refused[0]!.lastError).toBe('broker_refused');
    const log = await stack.api.app.inject({
      url: `/api/webhooks/${traced.json().id}/deliveries/${refused[0]!.id}`,
      headers: stack.api.auth('acct-traced'),
    });
    expect(log.json().attempts[0].error_message).toMatch(/403 access refused/);
    let queued = 0;
    while (await channel.get(queue, { noAck: true })) queued += 1;
    expect(queued).toBe(events);
  });
});

describe('message ids', () => {
  it('are the delivery’s, so two subscriptions of one event on one stream both arrive', async () => {
    const subject = `wh-isolation-${run}.calls`;
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await create('acct-two-copies', { type: 'nats', broker: 'events', subject });
      expect(created.statusCode).toBe(201);
      ids.push(created.json().id as string);
    }
    await stack.publisher.publish({ accountId: 'acct-two-copies', type: 'call.completed', data: {} });
    await waitFor('both deliveries confirmed', async () => {
      const rows = await stack.worker.prisma.delivery.findMany({ where: { subscriptionId: { in: ids } } });
      return rows.length === 2 && rows.every((d) => d.status === 'succeeded');
    });
    // JetStream dropped neither as the other's duplicate.
    expect((await jsm.streams.info(stream)).state.messages).toBe(2);
  });
});
