/**
 * The catalogue as the operator's file, and subscriptions choosing what they receive, through the
 * real API, worker, PostgreSQL and Redis: event types and wildcards, content filters and their
 * test endpoint, schema enforcement on published data (with a catalogue of the tests' own), a
 * catalogue that cannot be used stopping both services, and a retired type named at start.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { queueNames } from '@webhooks/shared';
import { loadWorkerConfig, startWorker } from '@webhooks/worker';
import { entries } from '../scripts/lib/services.js';
import { testEnv } from './support/api.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { testRedisUrl } from './support/redis.js';
import { waitFor } from '../scripts/lib/wait.js';

const billingCatalogue = 'test/fixtures/billing-catalogue.yaml';

let stack: TestStack;
let redis: Redis;
let events: Queue;
beforeAll(async () => {
  stack = await startTestStack('event-catalogue');
  redis = new Redis(testRedisUrl);
  events = new Queue(queueNames.events, { connection: redis, prefix: stack.api.prefix });
});
afterAll(async () => {
  await events.close();
  redis.disconnect();
  await stack.close();
});

const call = (account: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
  stack.api.app.inject({
    method,
    url,
    headers: stack.api.auth(account),
    ...(payload === undefined ? {} : { payload }),
  });

/** The deliveries the fan-out of event `id` created, once its job has completed (and so was removed). */
const fannedOut = async (id: string) => {
  await waitFor(`the fan-out of ${id}`, async () => (await events.getJob(id)) === undefined);
  return stack.api.app.prisma.delivery.count({ where: { eventId: id } });
};

/** Publishes through the API as `account`; returns the event id. */
const publish = async (account: string, type: string, data: Record<string, unknown>) => {
  const response = await call(account, 'POST', '/api/events', { type, data });
  expect(response.statusCode).toBe(202);
  return response.json().id as string;
};

describe('subscriptions choose their event types', () => {
  it('receives call.started and not message.sent with event_types ["call.*"]', async () => {
    const created = await call('chooser', 'POST', '/api/webhooks', {
      callback_url: `${stack.receiver.url}/calls-only`,
      event_types: ['call.*'],
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().event_types).toEqual(['call.*']);
    const message = await publish('chooser', 'message.sent', { text: 'hi' });
    expect(await fannedOut(message)).toBe(0);
    const started = await publish('chooser', 'call.started', { call_id: 'c1' });
    await waitFor('call.started', () => stack.receiver.at('/calls-only').length === 1);
    expect(JSON.parse(stack.receiver.at('/calls-only')[0]!.body)).toMatchObject({ type: 'call.started' });
    expect(stack.receiver.at('/calls-only')[0]!.headers['webhook-id']).toBe(started);
    const log = await call('chooser', 'GET', `/api/webhooks/${created.json().id}/deliveries`);
    expect(log.json().results.map((d: { event_id: string }) => d.event_id)).toEqual([started]);
  });

  it('changes them on update, and lists subscriptions by the type they receive', async () => {
    const sub = await stack.subscribe('lister', { callback_url: `${stack.receiver.url}/lister` });
    const kindSub = await stack.subscribe(
      'lister',
      { callback_url: `${stack.receiver.url}/lister-k` },
      'messages',
    );
    const updated = await call('lister', 'PUT', `/api/webhooks/${sub.id}`, {
      event_types: ['call.completed'],
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().event_types).toEqual(['call.completed']);
    const ids = async (type: string) =>
      (await call('lister', 'GET', `/api/webhooks?type=${type}`))
        .json()
        .results.map((s: { id: string }) => s.id);
    expect(await ids('call.completed')).toEqual([sub.id]);
    expect(await ids('message.sent')).toEqual([kindSub.id]);
    expect(await ids('call.started')).toEqual([]);
    expect(await ids('messages')).toEqual([kindSub.id]);
    const unknown = await call('lister', 'GET', '/api/webhooks?type=no.such');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().errors).toEqual([{ pointer: '/type', detail: expect.any(String) }]);
  });

  it.each([
    [['invoice.paid'], /invoice.paid is not an event type/],
    [['invoice.*'], /matches no event type/],
    [['message.sent'], /message.sent is not an event type this subscription can receive/],
    [[], /at least one/],
  ])(
    'refuses %j at the calls endpoint with 400 naming event_types, writing nothing',
    async (eventTypes, reason) => {
      const response = await call('refused-types', 'POST', '/api/webhooks/calls', {
        callback_url: `${stack.receiver.url}/refused`,
        event_types: eventTypes,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors[0]).toMatchObject({ pointer: '/event_types' });
      if (eventTypes.length > 0) expect(response.json().errors[0].detail).toMatch(reason);
      expect((await call('refused-types', 'GET', '/api/webhooks')).json().count).toBe(0);
    },
  );
});

describe('content filters', () => {
  const filter = { 'data.direction': 'inbound', 'data.duration_seconds': { $gte: 60 } };

  it('delivers only the events the filter matches, and creates no delivery for the others', async () => {
    const sub = await stack.subscribe('filterer', {
      callback_url: `${stack.receiver.url}/long-inbound`,
      event_types: ['call.completed'],
      filter,
    });
    expect(sub.filter).toEqual(filter);
    const short = await publish('filterer', 'call.completed', { direction: 'inbound', duration_seconds: 5 });
    const outbound = await publish('filterer', 'call.completed', {
      direction: 'outbound',
      duration_seconds: 600,
    });
    expect(await fannedOut(short)).toBe(0);
    expect(await fannedOut(outbound)).toBe(0);
    const long = await publish('filterer', 'call.completed', { direction: 'inbound', duration_seconds: 600 });
    expect(await fannedOut(long)).toBe(1);
    await waitFor('the matching event', () => stack.receiver.at('/long-inbound').length === 1);
    expect(stack.receiver.at('/long-inbound')[0]!.headers['webhook-id']).toBe(long);
    const log = await call('filterer', 'GET', `/api/webhooks/${sub.id}/deliveries`);
    expect(log.json().count).toBe(1);
    // Cleared, it receives everything of its types again.
    expect(
      (await call('filterer', 'PUT', `/api/webhooks/${sub.id}`, { filter: null })).json().filter,
    ).toBeNull();
    expect(await fannedOut(await publish('filterer', 'call.completed', { direction: 'outbound' }))).toBe(1);
  });

  it('tells whether a sample payload would be delivered, with its filter or a candidate', async () => {
    const sub = await stack.subscribe('tester', { callback_url: `${stack.receiver.url}/t`, filter }, 'calls');
    const test = async (body: object) => {
      const response = await call('tester', 'POST', `/api/webhooks/${sub.id}/filter-tests`, body);
      expect(response.statusCode).toBe(200);
      return response.json();
    };
    const payload = { type: 'call.completed', data: { direction: 'inbound', duration_seconds: 61 } };
    expect(await test({ payload })).toEqual({
      matches: true,
      filter_matches: true,
      type_received: true,
      filter,
    });
    expect(await test({ payload: { ...payload, data: { direction: 'outbound' } } })).toMatchObject({
      matches: false,
      filter_matches: false,
    });
    expect(await test({ payload: { ...payload, type: 'message.sent' } })).toMatchObject({
      matches: false,
      filter_matches: true,
      type_received: false,
    });
    expect(await test({ payload, filter: { 'data.duration_seconds': { $gt: 100 } } })).toMatchObject({
      matches: false,
    });
    const refused = await call('tester', 'POST', `/api/webhooks/${sub.id}/filter-tests`, {
      payload,
      filter: { $where: 'true' },
    });
    expect(refused.statusCode).toBe(400);
    // A sample is held to a published event's limits: 256 KiB of data, at most 32 levels deep.
    const tooLarge = await call('tester', 'POST', `/api/webhooks/${sub.id}/filter-tests`, {
      payload: { ...payload, data: { a: new Array<number>(140_000).fill(0) } },
    });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json().errors).toEqual([
      { pointer: '/payload/data', detail: expect.stringMatching(/limit is 262144/) },
    ]);
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const tooDeep = await call('tester', 'POST', `/api/webhooks/${sub.id}/filter-tests`, {
      payload: { ...payload, data: deep },
    });
    expect(tooDeep.statusCode).toBe(400);
    expect(tooDeep.json().errors[0].pointer).toMatch(/^\/payload\/data\/d\//);
  });

  it('refuses operators that are not allowed with 400 naming the place in filter, writing nothing', async () => {
    for (const bad of [{ $where: 'sleep(1000)' }, { 'data.text': { $regex: '(a+)+$' } }]) {
      const response = await call('filter-refused', 'POST', '/api/webhooks', {
        callback_url: `${stack.receiver.url}/x`,
        filter: bad,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors[0].pointer).toMatch(/^\/filter\/.*\$(where|regex)$/);
    }
    expect((await call('filter-refused', 'GET', '/api/webhooks')).json().count).toBe(0);
  });
});

describe('a catalogue of the operator’s own', () => {
  let billing: TestStack;
  beforeAll(async () => {
    billing = await startTestStack('event-catalogue-billing', { EVENT_CATALOGUE: billingCatalogue });
  });
  afterAll(() => billing.close());

  it('gives each kind its endpoint and enforces each type’s schema on POST /api/events', async () => {
    const sub = await billing.subscribe(
      'biller',
      { callback_url: `${billing.receiver.url}/paid` },
      'invoices',
    );
    expect(sub.event_types).toEqual(['invoice.paid', 'invoice.voided', 'invoice.sent']);
    const post = (type: string, data: object) =>
      billing.api.app.inject({
        method: 'POST',
        url: '/api/events',
        headers: billing.api.auth('biller'),
        payload: { type, data },
      });
    const refused = await post('invoice.paid', { invoice_id: 'INV-1', amount_cents: 0, note: 'x' });
    expect(refused.statusCode).toBe(400);
    expect(
      refused
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
    ).toEqual(['/data/amount_cents', '/data/invoice_id', '/data/note']);
    // The internal publisher refuses the same, and nothing was queued by either.
    await expect(
      billing.publisher.publish({ accountId: 'biller', type: 'invoice.paid', data: { invoice_id: 'in_1' } }),
    ).rejects.toMatchObject({ errors: [{ pointer: '/data/amount_cents' }] });
    expect(await post('call.started', {}).then((r) => r.statusCode)).toBe(400);
    const accepted = await post('invoice.paid', { invoice_id: 'in_1', amount_cents: 1999 });
    expect(accepted.statusCode).toBe(202);
    expect((await post('invoice.voided', { anything: [1, 2] })).statusCode).toBe(202);
    await waitFor('both accepted events', () => billing.receiver.at('/paid').length === 2);
    const catalogue = await billing.api.app.inject({
      method: 'GET',
      url: '/api/event-types',
      headers: billing.api.auth('biller'),
    });
    expect(catalogue.json().kinds.map((k: { kind: string }) => k.kind)).toEqual([
      'invoices',
      'customers',
      'operational',
    ]);
    expect(catalogue.json().kinds[0].event_types[2]).toMatchObject({
      type: 'invoice.sent',
      deprecated: true,
    });
  });

  it('names a subscription that chose a type the catalogue no longer has, and starts', async () => {
    const sub = await billing.subscribe('retiree', {
      callback_url: `${billing.receiver.url}/retired`,
      event_types: ['invoice.sent', 'customer.*'],
    });
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-'));
    const smaller = join(dir, 'catalogue.yaml');
    writeFileSync(
      smaller,
      'kinds:\n  invoices:\n    description: x\n    types:\n      invoice.paid: { description: x }\n',
    );
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const config = loadWorkerConfig(
      testEnv(billing.api.database.url, `${billing.api.prefix}-retired`, { EVENT_CATALOGUE: smaller }),
    );
    const worker = startWorker(config, pino({ level: 'warn' }, sink));
    try {
      const warning = await waitFor('the warning', () =>
        lines.find((line) => line.subscriptionId === sub.id),
      );
      expect(warning).toMatchObject({
        retiredEventTypes: ['invoice.sent', 'customer.*'],
        catalogue: smaller,
      });
    } finally {
      await worker.close();
    }
  });
});

describe('a catalogue that cannot be used', () => {
  it.each(['api', 'worker'] as const)(
    'stops the %s at start, naming the file, the place and why',
    (service) => {
      const dir = mkdtempSync(join(tmpdir(), 'catalogue-'));
      const bad = join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'kinds:\n  shop:\n    description: x\n    types:\n      order.placed:\n        description: x\n        schema: { type: objekt }\n',
      );
      const run = spawnSync(process.execPath, [entries[service]], {
        env: {
          ...process.env,
          NODE_ENV: 'development',
          EVENT_CATALOGUE: bad,
          WORKER_HEALTH_PORT: '0',
          PORT: '0',
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status).not.toBe(0);
      // Both print one line on stderr naming the variable (test/config-errors.test.ts).
      expect(run.stdout + run.stderr).toContain(
        `EVENT_CATALOGUE: event catalogue ${bad}: /kinds/shop/types/order.placed/schema`,
      );
    },
  );
});
