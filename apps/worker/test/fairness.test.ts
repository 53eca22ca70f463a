/**
 * Fairness between subscriptions end to end: a slow, failing or hostile callback costs other subscriptions nothing.
 * Orders of events are asserted, never durations.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { v7 as uuidv7 } from 'uuid';
import { queueNames, subscriptionGateKeys, type EventJobData } from '@webhooks/shared';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startTestDnsServer({ 'good.test': '127.0.0.1' }, ['hang.test']);
  stack = await startTestStack('fairness', {
    WORKER_CONCURRENCY: '4',
    SUBSCRIPTION_MAX_IN_FLIGHT: '2',
    DELIVERY_TIMEOUT_MS: '20000',
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
    DNS_SERVERS: dns.address,
    DNS_TIMEOUT_MS: '3000',
  });
});
afterAll(async () => {
  // Hanging requests end first, so that closing the worker does not wait for their timeouts.
  await stack.receiver.close();
  await stack.close();
  await dns.close();
}, 60_000);

const attemptsOf = (subscriptionId: string) =>
  stack.worker.prisma.deliveryAttempt.count({ where: { delivery: { subscriptionId } } });

const publishTo = (accountId: string) =>
  stack.publisher.publish({ accountId, type: 'call.completed', data: { call_id: uuidv7() } });

describe('a callback that never answers', () => {
  it('holds at most its in-flight limit of worker slots: a healthy delivery published afterwards arrives before any of its attempts times out', async () => {
    stack.receiver.script('/hang', ['hang']);
    const hanging = await stack.subscribe('acct-hang', { callback_url: `${stack.receiver.url}/hang` });
    const healthy = await stack.subscribe('acct-healthy', { callback_url: `${stack.receiver.url}/healthy` });

    for (let i = 0; i < 6; i++) await publishTo('acct-hang');
    await waitFor('two hanging attempts', () => stack.receiver.at('/hang').length === 2);
    const parked = subscriptionGateKeys(stack.api.prefix, hanging.id).parked;
    await waitFor('the other four parked', async () => (await stack.api.app.redis.zcard(parked)) === 4);

    await publishTo('acct-healthy');
    await waitFor('the healthy delivery', () => stack.receiver.at('/healthy').length === 1);
    expect(stack.receiver.at('/hang')).toHaveLength(2);
    await waitFor('the healthy attempt recorded', async () => (await attemptsOf(healthy.id)) === 1);
    expect(await attemptsOf(hanging.id)).toBe(0);
  });
});

describe('name resolution', () => {
  it('of a host whose DNS never answers does not hold up another subscription', async () => {
    const port = new URL(stack.receiver.url).port;
    const blackHoled = await stack.subscribe('acct-dns-hang', {
      callback_url: `http://hang.test:${port}/dns-hang`,
    });
    await stack.subscribe('acct-dns-ok', { callback_url: `http://good.test:${port}/dns-ok` });

    await publishTo('acct-dns-hang');
    await waitFor('the unanswered query', () => dns.queries.includes('hang.test'));
    await publishTo('acct-dns-ok');
    await waitFor('the delivery to good.test', () => stack.receiver.at('/dns-ok').length === 1);
    // The black-holed lookup has not ended: its attempt is recorded only once the resolver gives up.
    expect(await attemptsOf(blackHoled.id)).toBe(0);

    const [attempt] = await waitFor('the failed lookup recorded', async () => {
      const rows = await stack.worker.prisma.deliveryAttempt.findMany({
        where: { delivery: { subscriptionId: blackHoled.id } },
      });
      return rows.length > 0 && rows;
    });
    expect(attempt?.errorClass).toBe('dns');
    expect(stack.receiver.at('/dns-hang')).toHaveLength(0);
  });
});

describe('Retry-After', () => {
  it('of a 503 moves the next attempt at least that far out, and next_attempt_at says so', async () => {
    stack.receiver.script('/busy', [{ status: 503, headers: { 'retry-after': '3' } }, 200]);
    const sub = await stack.subscribe('acct-busy', { callback_url: `${stack.receiver.url}/busy` });
    const { id } = await publishTo('acct-busy');
    const waiting = await waitFor('the first attempt recorded', async () => {
      const row = await stack.worker.prisma.delivery.findFirst({
        where: { eventId: id, subscriptionId: sub.id },
        include: { attempts: true },
      });
      return row?.attemptsMade === 1 && row;
    });
    const [first] = waiting.attempts;
    expect(waiting.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(first!.startedAt.getTime() + 3_000);

    await waitFor('the second attempt', () => stack.receiver.at('/busy').length === 2);
    const [a, b] = stack.receiver.at('/busy');
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(3_000);
  });
});

describe('a poisoned event', () => {
  it('fails alone: the healthy event batched with it is delivered once, with one attempt', async () => {
    await stack.subscribe('acct-poison', { callback_url: `${stack.receiver.url}/poison` });
    const events = new Queue<EventJobData>(queueNames.events, {
      connection: { url: testRedisUrl },
      prefix: stack.api.prefix,
    });
    const event = (data: Record<string, unknown>): EventJobData => ({
      id: uuidv7(),
      accountId: 'acct-poison',
      type: 'call.completed',
      data,
      timestamp: '2026-11-21T12:00:00.000',
    });
    // Straight onto the queue, as a publisher that skipped the checks at the door would.
    const poisoned = event({ note: 'nul \u0000 byte' });
    const healthy = event({ note: 'fine' });
    try {
      await events.addBulk(
        [poisoned, healthy].map((data) => ({ name: 'event', data, opts: { jobId: data.id } })),
      );
      await waitFor('the healthy delivery', () => stack.receiver.at('/poison').length === 1);
      await sleep(500);
      const received = stack.receiver.at('/poison');
      expect(received.map((r) => r.headers['webhook-id'])).toEqual([healthy.id]);
      const delivery = await waitFor('the healthy delivery recorded', async () => {
        const row = await stack.worker.prisma.delivery.findFirst({ where: { eventId: healthy.id } });
        return row?.status === 'succeeded' && row;
      });
      expect(delivery.attemptsMade).toBe(1);
      expect(await stack.worker.prisma.event.count({ where: { id: poisoned.id } })).toBe(0);
    } finally {
      await events.close();
    }
  });
});
