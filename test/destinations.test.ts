/**
 * Broker destinations through the real API, worker, PostgreSQL, Redis, RabbitMQ (the machine's,
 * on an exchange and queue of this run's own) and a NATS JetStream server of the test's own: a
 * subscription publishes the signed payload, confirmed by the broker; a missing exchange, an
 * unroutable message or a subject no stream stores fail their attempts saying so, without harming
 * another subscription's messages on the same broker; bad destinations are refused at create time
 * with problem details naming the field; and a NATS server stopped and restarted mid-burst loses no
 * accepted event.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Webhook } from 'standardwebhooks';
import { startTestStack, type TestStack } from './support/stack.js';
import { startPrivateNats, type PrivateNats } from './support/private-nats.js';
import { waitFor } from '../scripts/lib/wait.js';

const rabbitUrl = 'amqp://guest:guest@127.0.0.1:5672';
const run = randomUUID().slice(0, 8);
const exchange = `wh-test-${run}`;
const queue = `wh-test-${run}`;
const stream = `WH_TEST_${run}`;
const subjects = `wh-test-${run}.>`;

let stack: TestStack;
let nats: PrivateNats;
let rabbit: ChannelModel;
let channel: Channel;
let natsClient: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startPrivateNats();
  rabbit = await amqp.connect(rabbitUrl);
  channel = await rabbit.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, 'order.created');
  natsClient = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  jsm = await jetstreamManager(natsClient);
  await jsm.streams.add({ name: stream, subjects: [subjects] });
  stack = await startTestStack('destinations', {
    DESTINATION_BROKERS: JSON.stringify({
      orders: { type: 'rabbitmq', url: rabbitUrl },
      events: { type: 'nats', url: nats.url },
      // Kept for one account: the others are told it does not exist.
      private: { type: 'nats', url: nats.url, accounts: ['acct-private'] },
    }),
    // Quick retries, enough of them to outlast the NATS restart below.
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '10',
    DELIVERY_TIMEOUT_MS: '2000',
    // The breaker the restart opens probes again within a second, not the default 30 s.
    BREAKER_COOLDOWN_MS: '500',
    BREAKER_MAX_COOLDOWN_MS: '1000',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    CALLBACK_VERIFICATION: 'challenge',
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await channel?.deleteQueue(queue).catch(() => undefined);
  await channel?.deleteExchange(exchange).catch(() => undefined);
  await rabbit?.close();
  await natsClient?.close();
  await nats?.destroy();
}, 60_000);

const publish = (account: string, data: Record<string, unknown>) =>
  stack.publisher.publish({ accountId: account, type: 'call.completed', data });

/**
 * A subscription's deliveries, read from the database: polling the API would spend the account's
 * request limit. The delivery log's own answer is read once, by {@link attemptErrors}.
 */
const deliveriesOf = async (subscriptionId: string) =>
  (
    await stack.worker.prisma.delivery.findMany({
      where: { subscriptionId },
      select: { id: true, status: true, lastError: true },
    })
  ).map((d) => ({ id: d.id, status: d.status as string, last_error: d.lastError }));

/** The error messages of a delivery's attempts, from the delivery log. */
const attemptErrors = async (account: string, subscriptionId: string, deliveryId: string) =>
  (
    await stack.api.app.inject({
      url: `/api/webhooks/${subscriptionId}/deliveries/${deliveryId}`,
      headers: stack.api.auth(account),
    })
  )
    .json()
    .attempts.map((a: { error_message: string | null }) => a.error_message) as string[];

/** The messages of this run's queue, taken off it. */
async function queued(count: number) {
  const messages: amqp.GetMessage[] = [];
  await waitFor(`${count} messages on ${queue}`, async () => {
    for (
      let message = await channel.get(queue, { noAck: true });
      message;
      message = await channel.get(queue, { noAck: true })
    )
      messages.push(message);
    return messages.length >= count;
  });
  return messages;
}

describe('a RabbitMQ destination', () => {
  const account = 'acct-rabbitmq';
  let subscription: { id: string; secret: string };

  it('publishes the signed payload to the exchange, delivered once the broker confirms it', async () => {
    const created = await stack.subscribe(account, {
      destination: { type: 'rabbitmq', broker: 'orders', exchange, routing_key: 'order.created' },
    });
    subscription = created;
    // No challenge for a broker the operator named, even with CALLBACK_VERIFICATION=challenge.
    expect(created).toMatchObject({
      status: 'active',
      destination: { type: 'rabbitmq', broker: 'orders', exchange, routing_key: 'order.created' },
      callback_url: `rabbitmq://orders/${exchange}/order.created`,
    });
    const { id: eventId } = await publish(account, { order: 1 });
    const [message] = await queued(1);
    const body = message!.content.toString();
    const headers = message!.properties.headers as Record<string, string>;
    expect(JSON.parse(body)).toMatchObject({ type: 'call.completed', data: { order: 1 } });
    expect(message!.properties.contentType).toBe('application/json');
    // The message id is the delivery's: one per subscription's copy of the event, kept across attempts.
    const [delivery] = await deliveriesOf(created.id);
    expect(message!.properties.messageId).toBe(delivery!.id);
    // Verified by the Standard Webhooks library from the message headers, as a consumer would.
    expect(() =>
      new Webhook(created.secret).verify(body, {
        'webhook-id': headers['webhook-id']!,
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': headers['webhook-signature']!,
      }),
    ).not.toThrow();
    await waitFor('the delivery confirmed', async () =>
      (await deliveriesOf(created.id)).some((d) => d.status === 'succeeded'),
    );
    expect(eventId).toBeDefined();
  });

  it('fails the attempts of a missing exchange and of an unroutable message, saying so, and keeps publishing for others', async () => {
    const missing = await stack.subscribe('acct-rabbitmq-missing', {
      destination: { type: 'rabbitmq', broker: 'orders', exchange: `${exchange}-missing`, routing_key: 'x' },
    });
    const unroutable = await stack.subscribe('acct-rabbitmq-unroutable', {
      destination: { type: 'rabbitmq', broker: 'orders', exchange, routing_key: 'nobody.listens' },
    });
    await publish('acct-rabbitmq-missing', { order: 2 });
    await publish('acct-rabbitmq-unroutable', { order: 3 });
    for (const [owner, sub, error, text] of [
      [
        'acct-rabbitmq-missing',
        missing,
        'broker_refused',
        `the broker has no exchange named "${exchange}-missing"`,
      ],
      [
        'acct-rabbitmq-unroutable',
        unroutable,
        'broker_unroutable',
        'the broker routed the message to no queue',
      ],
    ] as const) {
      const [delivery] = await waitFor(`a failed attempt of ${owner}`, async () => {
        const rows = await deliveriesOf(sub.id);
        return rows.some((d) => d.last_error === error) && rows;
      });
      // Any of its attempts: on a busy machine, a first one may time out connecting.
      expect(await attemptErrors(owner, sub.id, delivery!.id)).toContainEqual(expect.stringContaining(text));
    }
    // The channel the good subscription publishes on is intact.
    await publish(account, { order: 4 });
    const [message] = await queued(1);
    expect(JSON.parse(message!.content.toString())).toMatchObject({ data: { order: 4 } });
    expect(subscription.id).toBeDefined();
  });
});

describe('a NATS JetStream destination', () => {
  const account = 'acct-nats';

  it('publishes the signed payload to the subject, delivered once JetStream acknowledges it', async () => {
    const subject = `wh-test-${run}.calls`;
    const created = await stack.subscribe(account, {
      destination: { type: 'nats', broker: 'events', subject },
    });
    expect(created).toMatchObject({ status: 'active', callback_url: `nats://events/${subject}` });
    await publish(account, { call: 1 });
    const stored = await waitFor('the message in the stream', () =>
      jsm.streams
        .getMessage(stream, { last_by_subj: subject })
        .then((message) => message ?? false)
        .catch(() => false as const),
    );
    const body = new TextDecoder().decode(stored!.data);
    const header = (name: string) => stored!.header.get(name);
    expect(JSON.parse(body)).toMatchObject({ type: 'call.completed', data: { call: 1 } });
    const [delivery] = await deliveriesOf(created.id);
    expect(header('Nats-Msg-Id')).toBe(delivery!.id);
    expect(() =>
      new Webhook(created.secret).verify(body, {
        'webhook-id': header('webhook-id'),
        'webhook-timestamp': header('webhook-timestamp'),
        'webhook-signature': header('webhook-signature'),
      }),
    ).not.toThrow();
  });

  it('counts acknowledged publishes as confirmed: the breaker stays closed and the health healthy', async () => {
    const owner = 'acct-nats-healthy';
    const subject = `wh-test-${run}.healthy`;
    const sub = await stack.subscribe(owner, { destination: { type: 'nats', broker: 'events', subject } });
    // More than BREAKER_FAILURES_IN_ROW (20): read as failures, these would open the breaker.
    const count = 25;
    for (let i = 0; i < count; i += 1) await publish(owner, { i });
    // Counted by type: a breaker opened by these would add its notices to the subscription's deliveries.
    await waitFor(
      `${count} deliveries confirmed`,
      async () =>
        (await stack.worker.prisma.delivery.count({
          where: { subscriptionId: sub.id, status: 'succeeded', event: { type: 'call.completed' } },
        })) === count,
    );
    const read = async (url: string) =>
      (await stack.api.app.inject({ url, headers: stack.api.auth(owner) })).json();
    expect((await read(`/api/webhooks/${sub.id}`)).delivery.breaker).toMatchObject({ state: 'closed' });
    expect(await read(`/api/webhooks/${sub.id}/health`)).toMatchObject({
      state: 'healthy',
      consecutive_failures: 0,
      last_failure: null,
      windows: { last_15_minutes: { attempts: count, succeeded: count } },
    });
  });

  it('fails the attempts of a subject no stream stores, saying so', async () => {
    const owner = 'acct-nats-nostream';
    const sub = await stack.subscribe(owner, {
      destination: { type: 'nats', broker: 'events', subject: `nobody-${run}.calls` },
    });
    await publish(owner, { call: 2 });
    const [delivery] = await waitFor('a failed attempt', async () => {
      const rows = await deliveriesOf(sub.id);
      return rows.some((d) => d.last_error === 'broker_refused') && rows;
    });
    expect(await attemptErrors(owner, sub.id, delivery!.id)).toContainEqual(
      expect.stringContaining(`no JetStream stream stores subject "nobody-${run}.calls"`),
    );
  });

  it('loses no accepted event when the server is stopped and restarted mid-burst', async () => {
    const owner = 'acct-nats-restart';
    const subject = `wh-test-${run}.restart`;
    // Paced at 20 a second, so that the burst is still going when the server stops.
    const sub = await stack.subscribe(owner, {
      destination: { type: 'nats', broker: 'events', subject },
      rate_limit: 20,
    });
    const burst = 100;
    const accepted = new Set<string>();
    for (let i = 0; i < burst; i += 1) accepted.add((await publish(owner, { n: i })).id);
    const storedCount = async () => {
      try {
        return (await jsm.streams.info(stream, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
      } catch {
        return 0;
      }
    };
    await waitFor('a tenth of the burst stored', async () => (await storedCount()) >= burst / 10);
    await nats.stop();
    const succeededAtStop = (await deliveriesOf(sub.id)).filter((d) => d.status === 'succeeded').length;
    expect(succeededAtStop).toBeLessThan(burst);
    // Attempts fail while it is down (a publish waits for its acknowledgement, then counts as failed).
    await waitFor(
      'an attempt failed during the outage',
      async () => (await deliveriesOf(sub.id)).some((d) => d.last_error !== null),
      60_000,
    ).catch(async (error: Error) => {
      const rows = await deliveriesOf(sub.id);
      const statuses = rows.map((d) => `${d.status}:${d.last_error}`);
      throw new Error(
        `${error.message}; ${succeededAtStop} succeeded at the stop; now ${statuses.join(' ')}`,
      );
    });
    await nats.start();
    await waitFor(
      'every delivery confirmed',
      async () =>
        (await stack.worker.prisma.delivery.count({
          where: { subscriptionId: sub.id, status: 'succeeded', event: { type: 'call.completed' } },
        })) === burst,
      120_000,
    );
    // Every accepted event is in the stream, once: a retry JetStream had stored is a duplicate it drops.
    // The breaker the outage opened announces itself to the account: those events are not the burst's.
    const ids = new Set<number>();
    let stored = 0;
    const info = await jsm.streams.info(stream);
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
      const message = await jsm.streams.getMessage(stream, { seq });
      if (message?.subject !== subject) continue;
      const payload = JSON.parse(new TextDecoder().decode(message.data));
      if (payload.type !== 'call.completed') continue;
      stored += 1;
      ids.add(payload.data.n);
    }
    expect(ids.size).toBe(burst);
    expect(stored).toBe(burst);
    expect(accepted.size).toBe(burst);
  }, 180_000);
});

describe('moving a subscription between destinations', () => {
  it('moves a broker destination to HTTP with PUT callback_url, and back with PUT destination', async () => {
    const owner = 'acct-destination-move';
    const sub = await stack.subscribe(owner, {
      destination: { type: 'nats', broker: 'events', subject: 'a.b' },
    });
    const put = (payload: Record<string, unknown>) =>
      stack.api.app.inject({
        method: 'PUT',
        url: `/api/webhooks/${sub.id}`,
        headers: stack.api.auth(owner),
        payload,
      });
    // Credentials go to HTTP callbacks only, also when the destination is not in the same body.
    for (const payload of [
      { auth: { type: 'basic', username: 'u', password: 'p' } },
      { client_certificate: { certificate: 'x', key: 'y' } },
    ]) {
      const refused = await put(payload);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().errors[0].pointer).toBe(`/${Object.keys(payload)[0]}`);
    }
    const toHttp = await put({
      callback_url: `${stack.receiver.url}/moved-back`,
      auth: { type: 'basic', username: 'u', password: 'p' },
    });
    expect(toHttp.statusCode).toBe(200);
    expect(toHttp.json()).toMatchObject({ auth: { type: 'basic', username: 'u' } });
    // Back on HTTP, the new callback answers its challenge before it receives anything.
    expect(toHttp.json()).toMatchObject({ destination: { type: 'http' }, status: 'pending' });
    const toBroker = await put({
      destination: { type: 'rabbitmq', broker: 'orders', exchange, routing_key: 'order.created' },
    });
    expect(toBroker.statusCode).toBe(200);
    expect(toBroker.json()).toMatchObject({
      destination: { type: 'rabbitmq', exchange },
      callback_url: `rabbitmq://orders/${exchange}/order.created`,
      status: 'active',
    });
    // The HTTP callback's credentials did not follow it to the broker.
    expect(toBroker.json().auth ?? null).toBeNull();
    const stored = await stack.api.app.prisma.subscription.findUnique({ where: { id: sub.id } });
    expect([stored?.auth, stored?.clientTls]).toEqual([null, null]);
  });
});

describe('creating a broker destination', () => {
  const account = 'acct-destination-checks';
  const create = (body: Record<string, unknown>) =>
    stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth(account),
      payload: body,
    });

  it.each([
    [{ destination: { type: 'nats', broker: 'nowhere', subject: 'a' } }, '/destination/broker'],
    [{ destination: { type: 'nats', broker: 'orders', subject: 'a' } }, '/destination/broker'],
    [{ destination: { type: 'nats', broker: 'private', subject: 'a' } }, '/destination/broker'],
    [{ destination: { type: 'nats', broker: 'events', subject: 'a.>' } }, '/destination/subject'],
    [{ destination: { type: 'rabbitmq', broker: 'orders', exchange: 'e' } }, '/destination/routing_key'],
    [
      {
        callback_url: 'https://client.example/hooks',
        destination: { type: 'nats', broker: 'events', subject: 'a' },
      },
      '/callback_url',
    ],
    [{ destination: { type: 'http' } }, '/callback_url'],
    [{}, '/callback_url'],
  ])('refuses %j with problem details naming %s, and creates nothing', async (body, pointer) => {
    const answer = await create(body);
    expect(answer.statusCode).toBe(400);
    expect(answer.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(answer.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    const list = await stack.api.app.inject({ url: '/api/webhooks', headers: stack.api.auth(account) });
    expect(list.json().count).toBe(0);
  });
});
