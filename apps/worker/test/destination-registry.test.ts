/**
 * The destination registry against a NATS server of the test's own: a broker destination goes to its
 * broker's publisher only for an account the broker's configuration lets publish there, so that
 * narrowing DESTINATION_BROKERS after subscriptions were created takes effect on their next
 * attempt; a broker the worker does not know fails the attempt, saying so.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { parseDestinationBrokers, relayKeys } from '@webhooks/shared';
import { createAttemptSender, type AttemptSender } from '../src/delivery/attempt.js';
import { createBrokerPublishers, createDestinationSender } from '../src/destinations/registry.js';
import { createRelaySender } from '../src/destinations/relay.js';
import { startPrivateNats, type PrivateNats } from '../../../test/support/private-nats.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

/** The event fields of a delivery reference, the same for every publish here. */
const eventOf = {
  eventId: 'event-1',
  eventType: 'call.completed',
  occurredAt: new Date('2026-12-01T00:00:00Z'),
};

let nats: PrivateNats;
let sender: AttemptSender;
const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('registry');
beforeAll(async () => {
  nats = await startPrivateNats();
  const brokers = parseDestinationBrokers(
    JSON.stringify({ acme: { type: 'nats', url: nats.url, accounts: ['acct-acme'] } }),
  );
  const http = createAttemptSender({
    timeoutMs: 2_000,
    policy: { allowPrivate: true, ports: [[1, 65535]], denyCidrs: [] },
    userAgent: 'test',
  });
  // A first connection on a busy CI machine may take more than the usual attempt timeout.
  const publishers = createBrokerPublishers(brokers, { timeoutMs: 10_000, log: pino({ level: 'silent' }) });
  const relay = createRelaySender({
    redis,
    blocking: () => redis.duplicate(),
    prefix,
    timeoutMs: 300,
    maxSessionBytes: 65_536,
    log: pino({ level: 'silent' }),
  });
  sender = createDestinationSender(http, brokers, publishers, relay);
});
afterAll(async () => {
  sender.close();
  await nats.destroy();
  await dropPrefix(prefix);
  redis.disconnect();
});

const headers = { 'webhook-id': 'msg_registry', 'content-type': 'application/json' };

describe('the destination registry', () => {
  it('relays a cli destination to its session, and fails it as a timeout when no CLI answers', async () => {
    const pending = sender.send('cli://session-nobody', '{"a":1}', headers, null, {
      accountId: 'acct-acme',
      subscriptionId: 'sub',
      deliveryId: 'delivery-cli',
      ...eventOf,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const requests = relayKeys(prefix, 'session-nobody').requests;
    const entries = await redis.xrange(requests, '-', '+');
    expect(entries).toHaveLength(1);
    expect(entries[0]![1]).toEqual(expect.arrayContaining(['body', '{"a":1}']));
    expect(await pending).toMatchObject({ statusCode: null, errorClass: 'timeout' });
    // The attempt is over: its copy of the body is gone.
    expect(await redis.xlen(requests)).toBe(0);
  });

  it('publishes for an account the broker lets in', async () => {
    // No stream stores this subject: the broker answered, so the publisher was reached.
    const result = await sender.send('nats://acme/registry-nobody.x', '{}', headers, null, {
      accountId: 'acct-acme',
      subscriptionId: 'sub',
      deliveryId: 'delivery-1',
      ...eventOf,
    });
    expect(result).toMatchObject({
      errorClass: 'broker_refused',
      errorMessage: expect.stringContaining('no JetStream stream stores subject'),
    });
  });

  it('refuses another account, and a broker it does not know, without publishing', async () => {
    for (const [url, account] of [
      ['nats://acme/registry-nobody.x', 'acct-other'],
      ['nats://gone/registry-nobody.x', 'acct-acme'],
    ] as const) {
      const result = await sender.send(url, '{}', headers, null, {
        accountId: account,
        subscriptionId: 'sub',
        deliveryId: 'delivery-1',
        ...eventOf,
      });
      expect(result).toMatchObject({ errorClass: 'broker_unavailable', statusCode: null });
      expect(result.errorMessage).toMatch(/has no broker named "(acme|gone)" for this account/);
    }
  });
});
