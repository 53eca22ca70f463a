/**
 * Transformations through the real API, worker, PostgreSQL, Redis and an HTTP receiver: a
 * subscription's function reshapes the payload, its headers and its URL, and the signature covers
 * what is sent; a function can cancel a delivery; one that loops until its budget fails its own
 * attempts without holding up another account's deliveries; the API checks and tries functions in
 * the same sandbox, and refuses them where the deployment turned them off.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { hostCapKeys } from '../apps/worker/src/delivery/host-gate.js';
import { startTestApi, type TestApi } from './support/api.js';
import { testRedisUrl } from './support/redis.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  // Two quick attempts, and no auto-disable, so that a failing function's deliveries are given up
  // within the test, each after both attempts.
  stack = await startTestStack('transformations', {
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '2',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    // Room for a one-line function on a busy CI machine; the looping one still runs out.
    TRANSFORMATION_TIMEOUT_MS: '250',
  });
});
afterAll(() => stack.close(), 60_000);

const slack = `function handler(webhook) {
  webhook.payload = { text: webhook.event_type + ' lasted ' + webhook.payload.data.duration_s + ' s' };
  webhook.headers['x-slack-team'] = 'T0';
  webhook.url = webhook.url.replace('/original', '/moved');
  return webhook;
}`;

const deliveriesOf = async (account: string, id: string) =>
  (
    await stack.api.app.inject({ url: `/api/webhooks/${id}/deliveries`, headers: stack.api.auth(account) })
  ).json().results as Array<{ id: string; status: string; last_error: string | null }>;

describe('a subscription with a transformation', () => {
  it('sends the transformed body, headers and URL, signed as sent', async () => {
    const created = await stack.subscribe('acct-slack', {
      callback_url: `${stack.receiver.url}/original`,
      transformation: slack,
    });
    expect(created.transformation).toBe(slack);
    await stack.publisher.publish({
      accountId: 'acct-slack',
      type: 'call.completed',
      data: { duration_s: 42 },
    });
    await waitFor('the transformed delivery', () => stack.receiver.at('/moved').length === 1);
    const [received] = stack.receiver.at('/moved');
    expect(JSON.parse(received!.body)).toEqual({ text: 'call.completed lasted 42 s' });
    expect(received!.headers['x-slack-team']).toBe('T0');
    expect(stack.receiver.at('/original')).toHaveLength(0);
    // Verified by the Standard Webhooks library over the body as received.
    expect(
      new Webhook(created.secret).verify(received!.body, {
        'webhook-id': String(received!.headers['webhook-id']),
        'webhook-timestamp': String(received!.headers['webhook-timestamp']),
        'webhook-signature': String(received!.headers['webhook-signature']),
      }),
    ).toEqual({ text: 'call.completed lasted 42 s' });
  });

  it('sends a delivery moved to another host on that host’s slot, and gives both hosts’ slots back', async () => {
    const created = await stack.subscribe('acct-moved-host', {
      callback_url: `${stack.receiver.url}/host-moved`,
      transformation:
        "function handler(w) { w.url = w.url.replace('//127.0.0.1:', '//localhost:'); return w; }",
    });
    expect(stack.receiver.url).toContain('//127.0.0.1:');
    const event = await stack.publisher.publish({
      accountId: 'acct-moved-host',
      type: 'call.completed',
      data: { duration_s: 1 },
    });
    await waitFor('the delivery sent to the other host', () => stack.receiver.at('/host-moved').length === 1);
    expect(stack.receiver.at('/host-moved')[0]!.headers.host).toMatch(/^localhost:/);
    // Each host's cap counts the attempt under its account and job; neither keeps it past the
    // attempt's end (an unreleased slot would be held for its whole lease, 15 s).
    const member = `acct-moved-host\t${event.id}.${created.id}`;
    const redis = new Redis(testRedisUrl);
    try {
      await waitFor(
        'both hosts’ slots given back',
        async () => {
          const held = await Promise.all(
            ['127.0.0.1', 'localhost'].map((host) =>
              redis.zscore(hostCapKeys(stack.workerConfig.QUEUE_PREFIX, host).leases, member),
            ),
          );
          return held.every((score) => score === null);
        },
        5_000,
      );
    } finally {
      redis.disconnect();
    }
    expect((await deliveriesOf('acct-moved-host', created.id)).map((d) => d.status)).toEqual(['succeeded']);
  });

  it('cancels a delivery the function cancels, sending nothing', async () => {
    const created = await stack.subscribe('acct-cancel', {
      callback_url: `${stack.receiver.url}/cancelled`,
      transformation: 'function handler(w) { if (w.payload.data.skip) w.cancel = true; return w; }',
    });
    await stack.publisher.publish({ accountId: 'acct-cancel', type: 'call.completed', data: { skip: true } });
    await stack.publisher.publish({
      accountId: 'acct-cancel',
      type: 'call.completed',
      data: { skip: false },
    });
    await waitFor('the kept delivery', () => stack.receiver.at('/cancelled').length === 1);
    await waitFor('the cancelled delivery', async () =>
      (await deliveriesOf('acct-cancel', created.id)).some((d) => d.status === 'cancelled'),
    );
    const deliveries = await deliveriesOf('acct-cancel', created.id);
    expect(deliveries.map((d) => [d.status, d.last_error]).sort()).toEqual([
      ['cancelled', 'cancelled_by_transformation'],
      ['succeeded', null],
    ]);
    expect(JSON.parse(stack.receiver.at('/cancelled')[0]!.body).data).toEqual({ skip: false });
  });

  it('fails the attempts of a function that runs past its budget, while another account’s deliveries go on', async () => {
    const hostile = await stack.subscribe('acct-hostile', {
      callback_url: `${stack.receiver.url}/hostile`,
      transformation: 'function handler(w) { for (;;) {} }',
    });
    await stack.subscribe('acct-neighbour', { callback_url: `${stack.receiver.url}/neighbour` });
    for (let i = 0; i < 10; i++)
      await stack.publisher.publish({ accountId: 'acct-hostile', type: 'call.completed', data: { i } });
    await stack.publisher.publish({ accountId: 'acct-neighbour', type: 'call.completed', data: {} });
    await waitFor('the neighbour’s delivery', () => stack.receiver.at('/neighbour').length === 1);
    const neighbourAt = stack.receiver.at('/neighbour')[0]!.at;

    await waitFor('every hostile delivery given up', async () => {
      const deliveries = await deliveriesOf('acct-hostile', hostile.id);
      return deliveries.length === 10 && deliveries.every((d) => d.status === 'failed');
    });
    const [first] = await deliveriesOf('acct-hostile', hostile.id);
    const detail = (
      await stack.api.app.inject({
        url: `/api/webhooks/${hostile.id}/deliveries/${first!.id}`,
        headers: stack.api.auth('acct-hostile'),
      })
    ).json() as { attempts: Array<{ error: string; error_message: string; started_at: string }> };
    expect(detail.attempts).toHaveLength(2);
    expect(detail.attempts[0]).toMatchObject({ error: 'transformation_failed' });
    expect(detail.attempts[0]!.error_message).toMatch(/time budget/);
    expect(stack.receiver.at('/hostile')).toHaveLength(0);
    // The twenty runs take a budget each on the transformation thread, one after another; the
    // neighbour's delivery did not wait for them.
    const [{ last }] = await stack.api.app.prisma.$queryRaw<[{ last: Date }]>`
      SELECT max(a.started_at) AS last FROM delivery_attempts a
      JOIN deliveries d ON d.id = a.delivery_id WHERE d.subscription_id = ${hostile.id}::uuid`;
    expect(neighbourAt).toBeLessThan(last.getTime());
  });
});

describe('the API and transformations', () => {
  it('refuses one that defines no handler, naming the field, and creates nothing', async () => {
    const response = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('acct-bad-transformation'),
      payload: { callback_url: `${stack.receiver.url}/bad`, transformation: 'function handle(w) { return w' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0].pointer).toBe('/transformation');
    expect(response.json().errors[0].detail).toMatch(/SyntaxError/);
    expect(
      await stack.api.app.prisma.subscription.count({ where: { accountId: 'acct-bad-transformation' } }),
    ).toBe(0);
  });

  it('tries a candidate on a sample payload, in the sandbox, sending nothing', async () => {
    const created = await stack.subscribe('acct-try', { callback_url: `${stack.receiver.url}/try` });
    const attempt = (transformation: string) =>
      stack.api.app.inject({
        method: 'POST',
        url: `/api/webhooks/${created.id}/transformation-tests`,
        headers: stack.api.auth('acct-try'),
        payload: { payload: { type: 'call.completed', data: { duration_s: 7 } }, transformation },
      });
    const transformed = (await attempt(slack)).json();
    expect(transformed).toEqual({
      result: 'transformed',
      payload: { text: 'call.completed lasted 7 s' },
      headers: { 'x-slack-team': 'T0' },
      url: `${stack.receiver.url}/try`,
    });
    expect((await attempt('function handler(w) { w.cancel = true; return w }')).json()).toEqual({
      result: 'cancelled',
    });
    const failed = (await attempt('function handler(w) { return typeof process + typeof require }')).json();
    expect(failed).toMatchObject({ result: 'failed', error: expect.stringMatching(/webhook object/) });
    expect(stack.receiver.at('/try')).toHaveLength(0);
  });
});

describe('a deployment with TRANSFORMATIONS=false', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('transformations-off', { TRANSFORMATIONS: 'false' });
  });
  afterAll(() => api.close());

  it('refuses a transformation, naming the field', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('acct-off'),
      payload: {
        callback_url: 'https://off.example/hooks',
        transformation: 'function handler(w) { return w }',
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0]).toMatchObject({
      pointer: '/transformation',
      detail: expect.stringMatching(/turned off/),
    });
  });
});
