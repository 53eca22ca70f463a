/**
 * RabbitMQ channels against the machine's broker, on an exchange and queue of this run's own: publishes
 * from 3,000 accounts (past the broker's 2,047 channels a connection) are all confirmed while the
 * broker counts at most the bound of channels on the worker's connection; idle channels are closed;
 * exchange checks share one channel, and a missing exchange's check does not fail the next publish.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import amqp, { type ChannelModel } from 'amqplib';
import { pino } from 'pino';
import type { BrokerTarget } from '@webhooks/shared';
import { createRabbitMqPublisher, defaultMaxChannels } from '../src/destinations/rabbitmq.js';
import { waitFor } from '../../../scripts/lib/wait.js';

/** The event fields of a delivery reference, the same for every publish here. */
const eventOf = {
  eventId: 'event-1',
  eventType: 'call.completed',
  occurredAt: new Date('2026-12-01T00:00:00Z'),
};

const rabbitUrl = 'amqp://guest:guest@127.0.0.1:5672';
const run = randomUUID().slice(0, 8);
const exchange = `wh-test-channels-${run}`;
const queue = `wh-test-channels-${run}`;
let admin: ChannelModel;

beforeAll(async () => {
  admin = await amqp.connect(rabbitUrl);
  const channel = await admin.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, 'k');
  await channel.close();
});
afterAll(async () => {
  const channel = await admin.createChannel();
  await channel.deleteQueue(queue);
  await channel.deleteExchange(exchange);
  await admin.close();
});

/** The channels the broker counts on this process's worker connections (`rabbitmqctl`). */
async function channelsAtBroker(): Promise<number> {
  const { stdout } = await promisify(execFile)('rabbitmqctl', [
    'list_connections',
    '-q',
    '--formatter',
    'json',
    'client_properties',
    'channels',
  ]);
  const rows = JSON.parse(stdout) as Array<{ client_properties: unknown[]; channels: number }>;
  return rows
    .filter((row) => JSON.stringify(row.client_properties).includes(`:${process.pid}`))
    .reduce((sum, row) => sum + row.channels, 0);
}

const target = (name: string): BrokerTarget => ({
  type: 'rabbitmq',
  broker: 'local',
  exchange: name,
  routingKey: 'k',
});
const headers = { 'webhook-id': 'msg_channels', 'webhook-timestamp': '1700000000' };

describe('RabbitMQ channels', () => {
  it('confirms publishes from 3,000 accounts within the bound of open channels, and closes idle ones', async () => {
    const publisher = createRabbitMqPublisher({
      url: rabbitUrl,
      timeoutMs: 10_000,
      log: pino({ level: 'silent' }),
      channelIdleMs: 1_000,
    });
    try {
      const accounts = Array.from({ length: 3_000 }, (_, i) => `acct-${run}-${i}`);
      let confirmed = 0;
      let mostChannels = 0;
      // 50 publishes in flight, as a worker's concurrency would have them.
      for (let i = 0; i < accounts.length; i += 50) {
        const results = await Promise.all(
          accounts.slice(i, i + 50).map((accountId, j) =>
            publisher.publish(target(exchange), `{"n":${i + j}}`, headers, {
              accountId,
              subscriptionId: 'sub',
              deliveryId: `delivery-${i + j}`,
              ...eventOf,
            }),
          ),
        );
        confirmed += results.filter((result) => result.errorClass === null).length;
        if (i % 1_000 === 0) mostChannels = Math.max(mostChannels, await channelsAtBroker());
      }
      mostChannels = Math.max(mostChannels, await channelsAtBroker());
      expect(confirmed).toBe(3_000);
      const check = await admin.createChannel();
      expect((await check.checkQueue(queue)).messageCount).toBe(3_000);
      await check.close();
      // The account channels and the one reserved for exchange checks.
      expect(mostChannels).toBeGreaterThan(0);
      expect(mostChannels).toBeLessThanOrEqual(defaultMaxChannels + 1);
      // No publish for a while: only the reserved channel stays.
      await waitFor('idle channels closed', async () => (await channelsAtBroker()) <= 1, 30_000, 500);
      // An account whose channel was closed is served again.
      const again = await publisher.publish(target(exchange), '{}', headers, {
        accountId: accounts[0]!,
        subscriptionId: 'sub',
        deliveryId: 'delivery-again',
        ...eventOf,
      });
      expect(again.errorClass).toBeNull();
    } finally {
      await publisher.close();
    }
  }, 120_000);

  it('fails a publish to a missing exchange and confirms the next one, whose check shares the reserved channel', async () => {
    const publisher = createRabbitMqPublisher({
      url: rabbitUrl,
      timeoutMs: 10_000,
      log: pino({ level: 'silent' }),
    });
    try {
      const [missing, present] = await Promise.all([
        publisher.publish(target(`${exchange}-missing`), '{}', headers, {
          accountId: 'a',
          subscriptionId: 'sub',
          deliveryId: 'd-1',
          ...eventOf,
        }),
        publisher.publish(target(exchange), '{}', headers, {
          accountId: 'a',
          subscriptionId: 'sub',
          deliveryId: 'd-2',
          ...eventOf,
        }),
      ]);
      expect(missing).toMatchObject({
        errorClass: 'broker_refused',
        errorMessage: expect.stringContaining('no exchange named'),
      });
      expect(present.errorClass).toBeNull();
    } finally {
      await publisher.close();
    }
  });
});
