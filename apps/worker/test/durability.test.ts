/**
 * Durability end to end on the shared servers (nothing is stopped here; the fault suite is
 * faults.test.ts): the reconciler, recovery, the exact auto-disable count and its operational
 * event, events nobody receives, retention of secrets and idempotency keys (the delivery log's
 * own is in log-partitions.test.ts), and the bounded delivery count.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { v7 as uuidv7 } from 'uuid';
import { deliveryJobId, queueNames, type EventJobData } from '@webhooks/shared';
import { startWorker } from '../src/index.js';
import { deleteExpiredRows } from '../src/retention.js';
import { afterStartupRetention, startTestStack, type TestStack } from '../../../test/support/stack.js';
import { insertFailedDeliveries } from '../../../test/support/failed-deliveries.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const silent = pino({ level: 'silent' });

/** Status of every delivery of `subscriptionId`, by event id. */
async function statuses(stack: TestStack, subscriptionId: string) {
  const rows = await stack.api.app.prisma.delivery.findMany({ where: { subscriptionId } });
  return new Map(rows.map((row) => [row.eventId, row.status]));
}

const allAre = async (stack: TestStack, subscriptionId: string, count: number, status: string) => {
  const found = await statuses(stack, subscriptionId);
  return found.size === count && [...found.values()].every((s) => s === status);
};

describe('the reconciler', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack('reconcile', {
      DELIVERY_BACKOFF_MS: '1000',
      RECONCILE_GRACE_MS: '0',
      RECONCILE_INTERVAL_MS: '3600000',
    });
  });
  afterAll(() => stack.close());

  it('re-creates the job of a pending delivery whose job was deleted by hand, once', async () => {
    stack.receiver.script('/lost', [500, 200]);
    const sub = await stack.subscribe('acct-lost', { callback_url: `${stack.receiver.url}/lost` });
    const { id } = await stack.publisher.publish({ accountId: 'acct-lost', type: 'call.started', data: {} });
    const delivery = await waitFor('the first attempt to be recorded', async () => {
      const row = await stack.api.app.prisma.delivery.findFirst({ where: { subscriptionId: sub.id } });
      return row?.attemptsMade === 1 ? row : undefined;
    });
    const queue = new Queue(queueNames.deliveries, {
      connection: { url: testRedisUrl },
      prefix: stack.api.prefix,
    });
    try {
      // A first attempt made inline is recorded before its retry's job is added: remove the job
      // once it exists, or it would be added after its removal.
      await waitFor(
        'the retry to be queued',
        async () => (await queue.getJob(deliveryJobId(id, sub.id))) !== undefined,
      );
      await queue.remove(deliveryJobId(id, sub.id));
      expect(await queue.getJob(deliveryJobId(id, sub.id))).toBeUndefined();
      await waitFor('its next attempt to be due', () => Date.now() > delivery.nextAttemptAt!.getTime());

      expect(await stack.worker.reconcile()).toEqual({ deliveries: 1, fanOuts: 0, notices: 0, listeners: 0 });
      expect(await stack.worker.reconcile()).toEqual({ deliveries: 0, fanOuts: 0, notices: 0, listeners: 0 });
      await waitFor('the delivery', () => allAre(stack, sub.id, 1, 'succeeded'));
      expect(stack.receiver.at('/lost').map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    } finally {
      await queue.close();
    }
  });

  it('retries a fan-out in the failed set', async () => {
    const sub = await stack.subscribe('acct-fan', { callback_url: `${stack.receiver.url}/fan` });
    await Promise.all(stack.worker.events.map((worker) => worker.pause()));
    const connection = new Redis(testRedisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue<EventJobData>(queueNames.events, { connection, prefix: stack.api.prefix });
    const taker = new Worker(queueNames.events, null, {
      connection,
      prefix: stack.api.prefix,
      autorun: false,
    });
    try {
      const data: EventJobData = {
        id: uuidv7(),
        accountId: 'acct-fan',
        type: 'call.started',
        data: {},
        timestamp: '2026-11-21T00:00:00.000',
      };
      await queue.add('event', data, { jobId: data.id, attempts: 1 });
      const job = await taker.getNextJob('test-token');
      await job!.moveToFailed(new Error('stranded for the test'), 'test-token');
      expect(await queue.getJobState(data.id)).toBe('failed');
      for (const worker of stack.worker.events) worker.resume();

      expect(await stack.worker.reconcile()).toEqual({ deliveries: 0, fanOuts: 1, notices: 0, listeners: 0 });
      await waitFor('the delivery', () => stack.receiver.at('/fan').length === 1);
      expect(stack.receiver.at('/fan')[0]!.headers['webhook-id']).toBe(data.id);
      await waitFor('its record', () => allAre(stack, sub.id, 1, 'succeeded'));
      expect(await stack.worker.reconcile()).toEqual({ deliveries: 0, fanOuts: 0, notices: 0, listeners: 0 });
    } finally {
      await taker.close();
      await queue.close();
      connection.disconnect();
    }
  });

  /**
   * Stores a `subscription.disabled` notice of `accountId` about `subscriptionId` as the record
   * statement does, with the worker gone before its fan-out job was added. @returns its event id
   */
  const storeNotice = async (accountId: string, subscriptionId: string): Promise<string> => {
    const id = uuidv7();
    await stack.api.app.prisma.event.create({
      data: {
        id,
        accountId,
        type: 'subscription.disabled',
        data: { subscription_id: subscriptionId, reason: 'consecutive_failures', failure_count: 20 },
        occurredAt: new Date(),
      },
    });
    return id;
  };

  it('publishes again a subscription.disabled notice stored without its fan-out, once', async () => {
    const ops = await stack.subscribe(
      'acct-notice',
      { callback_url: `${stack.receiver.url}/notice` },
      'operational',
    );
    const id = await storeNotice('acct-notice', ops.id);
    expect(await stack.worker.reconcile()).toEqual({ deliveries: 0, fanOuts: 0, notices: 1, listeners: 0 });
    await waitFor('the notice', () => stack.receiver.at('/notice').length === 1);
    expect(stack.receiver.at('/notice')[0]!.headers['webhook-id']).toBe(id);
    await waitFor('its record', () => allAre(stack, ops.id, 1, 'succeeded'));
    expect(await stack.worker.reconcile()).toEqual({ deliveries: 0, fanOuts: 0, notices: 0, listeners: 0 });
  });

  it('publishes a stored notice no subscription receives once, not at each run', async () => {
    const id = await storeNotice('acct-notice-nobody', uuidv7());
    expect(await stack.worker.reconcile()).toMatchObject({ notices: 1 });
    const queue = new Queue(queueNames.events, {
      connection: { url: testRedisUrl },
      prefix: stack.api.prefix,
    });
    try {
      await waitFor('its fan-out', async () => (await queue.getJobState(id)) === 'completed');
    } finally {
      await queue.close();
    }
    // Fanned out to nobody, it has no delivery: its kept job tells the next run it was published.
    expect(await stack.worker.reconcile()).toMatchObject({ notices: 0 });
  });

  it('does not store an event no subscription receives', async () => {
    const { id } = await stack.publisher.publish({
      accountId: 'acct-nobody',
      type: 'call.started',
      data: {},
    });
    const queue = new Queue(queueNames.events, {
      connection: { url: testRedisUrl },
      prefix: stack.api.prefix,
    });
    try {
      // A completed fan-out job is removed.
      await waitFor('the fan-out', async () => (await queue.getJobState(id)) === 'unknown');
      expect(await stack.api.app.prisma.event.count({ where: { id } })).toBe(0);
    } finally {
      await queue.close();
    }
  });
});

describe('DELIVERY_MAX_AGE', () => {
  it('gives up a delivery not sent in time as expired, without counting it against the callback', async () => {
    // The first attempt goes out well inside the 8 s; its retry, 12 s later, is past them.
    const stack = await startTestStack('expiry', { DELIVERY_MAX_AGE: '8', DELIVERY_BACKOFF_MS: '12000' });
    try {
      stack.receiver.script('/late', [500, 200]);
      const sub = await stack.subscribe('acct-late', { callback_url: `${stack.receiver.url}/late` });
      await stack.publisher.publish({ accountId: 'acct-late', type: 'call.started', data: {} });
      await waitFor('the delivery to end', () => allAre(stack, sub.id, 1, 'failed'), 45_000);
      const [delivery] = await stack.api.app.prisma.delivery.findMany({ where: { subscriptionId: sub.id } });
      expect([delivery!.lastError, delivery!.attemptsMade]).toEqual(['expired', 1]);
      expect(stack.receiver.at('/late')).toHaveLength(1);
      const row = await stack.api.app.prisma.subscription.findUniqueOrThrow({ where: { id: sub.id } });
      expect(row.consecutiveFailures).toBe(0);
    } finally {
      await stack.close();
    }
  });
});

describe('recovery', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack('recover', {
      DELIVERY_MAX_ATTEMPTS: '1',
      SUBSCRIPTION_DISABLE_AFTER: '25',
      // A pace no test here reaches but the budget's own: a call starts up to its batch of 1,000.
      RECOVER_ROUNDS_PER_MINUTE: '1000000',
    });
  });
  afterAll(() => stack.close());

  const recover = (subscriptionId: string, body: Record<string, unknown>, account = 'acct-rec') =>
    stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${subscriptionId}/recover`,
      headers: stack.api.auth(account),
      payload: body,
    });

  it('sends every failed delivery of the window again, once however often it is asked', async () => {
    stack.receiver.script('/rec', [500, 500, 500, 200]);
    const since = new Date(Date.now() - 1_000).toISOString();
    const sub = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/rec` });
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await stack.publisher.publish({ accountId: 'acct-rec', type: 'call.started', data: { i } })).id,
      );
    await waitFor('three failed deliveries', () => allAre(stack, sub.id, 3, 'failed'));

    const first = await recover(sub.id, { since });
    const second = await recover(sub.id, { since });
    expect([first.statusCode, first.json()]).toEqual([
      202,
      { count: 3, until: expect.any(String), continue_after: null },
    ]);
    expect([second.statusCode, second.json().count]).toEqual([202, 0]);
    await waitFor('the recovered deliveries', () => allAre(stack, sub.id, 3, 'succeeded'));
    const webhookIds = stack.receiver.at('/rec').map((r) => r.headers['webhook-id']);
    expect(webhookIds.sort()).toEqual([...ids, ...ids].sort());
    expect((await recover(sub.id, { since })).json().count).toBe(0);
  });

  it('recovers a large window over several calls, each continuing where the last stopped', async () => {
    const sub = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/many` });
    const since = new Date(Date.now() - 60_000).toISOString();
    await insertFailedDeliveries(stack, 'acct-rec', sub.id, 1_001);
    const first = (await recover(sub.id, { since })).json();
    expect(first).toMatchObject({ count: 1_000, continue_after: expect.any(String) });
    const rest = (await recover(sub.id, { since, until: first.until, after: first.continue_after })).json();
    expect(rest).toMatchObject({ count: 1, continue_after: null });
    const started = await stack.api.app.prisma.delivery.count({
      where: { subscriptionId: sub.id, round: { gt: 0 } },
    });
    expect(started).toBe(1_001);
  });

  it('takes at most 60 recover calls a minute per subscription, then 429 with Retry-After', async () => {
    const busy = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/busy` });
    const other = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/other` });
    const since = new Date().toISOString();
    const statuses = [];
    for (let i = 0; i < 61; i++) statuses.push((await recover(busy.id, { since })).statusCode);
    expect(statuses).toEqual([...Array(60).fill(202), 429]);
    const refused = await recover(busy.id, { since });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Counted on the subscription looked up: another spelling of its id is the same one.
    expect((await recover(busy.id.toUpperCase(), { since })).statusCode).toBe(429);
    expect((await recover(other.id, { since })).statusCode).toBe(202);
  });

  it("starts no more rounds a minute than the account's budget, and says where to continue", async () => {
    const budgeted = await startTestStack('recover-budget', { RECOVER_ROUNDS_PER_MINUTE: '2' });
    try {
      // `until` past now: a delivery stored within the call's own millisecond (its created_at
      // rounded up) would otherwise fall after the default `until`, the call's time.
      const until = new Date(Date.now() + 600_000).toISOString();
      const call = (subscriptionId: string, body: Record<string, unknown>, account = 'acct-budget') =>
        budgeted.api.app.inject({
          method: 'POST',
          url: `/api/webhooks/${subscriptionId}/recover`,
          headers: budgeted.api.auth(account),
          payload: { until, ...body },
        });
      const failedDeliveries = async (account: string, count: number) => {
        const sub = await budgeted.subscribe(account, { callback_url: `${budgeted.receiver.url}/budget` });
        await insertFailedDeliveries(budgeted, account, sub.id, count);
        return sub;
      };
      const since = new Date(Date.now() - 60_000).toISOString();
      const first = await failedDeliveries('acct-budget', 3);
      const second = await failedDeliveries('acct-budget', 1);
      const started = await call(first.id, { since });
      expect(started.json()).toMatchObject({ count: 2, continue_after: expect.any(String) });
      const more = await call(first.id, { since, after: started.json().continue_after });
      expect([more.statusCode, Number(more.headers['retry-after']) > 0]).toEqual([429, true]);
      // The budget is the account's, whichever subscription asks; another account has its own.
      expect((await call(second.id, { since })).statusCode).toBe(429);
      const elsewhere = await failedDeliveries('acct-other-budget', 1);
      expect((await call(elsewhere.id, { since }, 'acct-other-budget')).json().count).toBe(1);
      // Calls for several subscriptions at once share the account's window: 2 rounds between them.
      const concurrent = await Promise.all(
        [1, 2, 3].map(async () => (await failedDeliveries('acct-concurrent', 2)).id),
      );
      const answers = await Promise.all(concurrent.map((id) => call(id, { since }, 'acct-concurrent')));
      const recovering = answers.filter((answer) => answer.statusCode === 202);
      expect(recovering.reduce((sum, answer) => sum + (answer.json().count as number), 0)).toBe(2);
      expect(answers.filter((answer) => answer.statusCode === 429)).toHaveLength(3 - recovering.length);
    } finally {
      await budgeted.close();
    }
  });

  it('starts a recovery a window at a time: a call the window has nothing left for starts nothing until the next', async () => {
    // 120 a minute: windows of a second holding 2 rounds.
    const windowed = await startTestStack('recover-window', { RECOVER_ROUNDS_PER_MINUTE: '120' });
    try {
      const call = (subscriptionId: string, body: Record<string, unknown>) =>
        windowed.api.app.inject({
          method: 'POST',
          url: `/api/webhooks/${subscriptionId}/recover`,
          headers: windowed.api.auth('acct-window'),
          payload: body,
        });
      const sub = await windowed.subscribe('acct-window', {
        callback_url: `${windowed.receiver.url}/window`,
      });
      await insertFailedDeliveries(windowed, 'acct-window', sub.id, 3);
      const since = new Date(Date.now() - 60_000).toISOString();
      const first = await call(sub.id, { since });
      expect([first.statusCode, first.json()]).toEqual([
        202,
        { count: 2, until: expect.any(String), continue_after: expect.any(String) },
      ]);
      const body = { since, until: first.json().until, after: first.json().continue_after };
      const refused = await call(sub.id, body);
      expect([refused.statusCode, refused.headers['retry-after']]).toEqual([429, '1']);
      expect(refused.json().detail).toContain('RECOVER_ROUNDS_PER_MINUTE');
      const failed = () =>
        windowed.api.app.prisma.delivery.count({ where: { subscriptionId: sub.id, status: 'failed' } });
      expect(await failed()).toBe(1);

      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const rest = await call(sub.id, body);
      expect([rest.statusCode, rest.json()]).toMatchObject([202, { count: 1, continue_after: null }]);
      await waitFor('the three recovered rounds', () => windowed.receiver.at('/window').length === 3, 30_000);
      expect(await failed()).toBe(0);
    } finally {
      await windowed.close();
    }
  });

  it('leaves deliveries outside the window alone', async () => {
    stack.receiver.script('/window', [500]);
    const sub = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/window` });
    await stack.publisher.publish({ accountId: 'acct-rec', type: 'call.started', data: {} });
    await waitFor('the failed delivery', () => allAre(stack, sub.id, 1, 'failed'));
    const later = new Date(Date.now() + 60_000).toISOString();
    expect((await recover(sub.id, { since: later })).json().count).toBe(0);
    const past = { since: '2020-01-01T00:00:00Z', until: '2020-01-02T00:00:00Z' };
    expect((await recover(sub.id, past)).json().count).toBe(0);
  });

  it('refuses a disabled subscription (409) and a window that ends before it starts (400 naming until)', async () => {
    const sub = await stack.subscribe('acct-rec', { callback_url: `${stack.receiver.url}/off` });
    const bad = await recover(sub.id, { since: '2026-01-02T00:00:00Z', until: '2026-01-01T00:00:00Z' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([{ pointer: '/until', detail: 'must be later than since' }]);
    const notADate = await recover(sub.id, { since: 'yesterday' });
    expect(notADate.statusCode).toBe(400);
    expect(notADate.json().errors[0].pointer).toBe('/since');

    await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${sub.id}`,
      headers: stack.api.auth('acct-rec'),
      payload: { status: 'disabled' },
    });
    expect((await recover(sub.id, { since: '2026-01-01T00:00:00Z' })).statusCode).toBe(409);
    expect((await recover(sub.id, { since: '2026-01-01T00:00:00Z' }, 'someone-else')).statusCode).toBe(404);
  });
});

describe('auto-disable', () => {
  it('counts every failure exactly with two workers recording concurrently', async () => {
    const stack = await startTestStack('disable-count', {
      DELIVERY_MAX_ATTEMPTS: '1',
      SUBSCRIPTION_DISABLE_AFTER: '1000',
      SUBSCRIPTION_MAX_IN_FLIGHT: '100',
      // Every attempt must be made and counted: the breaker would hold most of them.
      BREAKER_FAILURES_IN_ROW: '1000',
      BREAKER_MIN_ATTEMPTS: '1000',
    });
    const second = startWorker(stack.workerConfig, silent);
    try {
      stack.receiver.script('/down', [500]);
      const sub = await stack.subscribe('acct-count', { callback_url: `${stack.receiver.url}/down` });
      await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          stack.publisher.publish({ accountId: 'acct-count', type: 'call.started', data: { i } }),
        ),
      );
      await waitFor('500 failed deliveries', () => allAre(stack, sub.id, 500, 'failed'), 60_000);
      const row = await stack.api.app.prisma.subscription.findUniqueOrThrow({ where: { id: sub.id } });
      expect(row.consecutiveFailures).toBe(500);
      expect(row.status).toBe('active');
    } finally {
      await second.close();
      await stack.close();
    }
  }, 90_000);

  it('tells the account with a subscription.disabled event, and refuses it from publishers', async () => {
    const stack = await startTestStack('disable-notice', {
      DELIVERY_MAX_ATTEMPTS: '1',
      SUBSCRIPTION_DISABLE_AFTER: '2',
    });
    try {
      // A token in the query, which the account's other callbacks must not see.
      stack.receiver.script('/failing?token=client-secret', [500]);
      const failing = await stack.subscribe(
        'acct-ops',
        { callback_url: `${stack.receiver.url}/failing?token=client-secret` },
        'calls',
      );
      const ops = await stack.subscribe(
        'acct-ops',
        { callback_url: `${stack.receiver.url}/ops` },
        'operational',
      );
      // Notices go through the fan-out as any event: a content filter that does not match keeps them.
      await stack.subscribe(
        'acct-ops',
        { callback_url: `${stack.receiver.url}/ops-filtered`, filter: { 'data.reason': 'manual' } },
        'operational',
      );
      const other = await stack.subscribe('acct-other', { callback_url: `${stack.receiver.url}/other` });
      for (let i = 0; i < 2; i++)
        await stack.publisher.publish({ accountId: 'acct-ops', type: 'call.started', data: { i } });

      const [notice] = await waitFor(
        'the operational event',
        () => stack.receiver.at('/ops').length > 0 && stack.receiver.at('/ops'),
      );
      // No `type`: the operational endpoint receives one type only (docs/api.md).
      expect(JSON.parse(notice!.body)).toMatchObject({
        data: {
          subscription_id: failing.id,
          resource_uri: failing.resource_uri,
          callback_url: `${stack.receiver.url}/failing`,
          reason: 'consecutive_failures',
          failure_count: 2,
        },
      });
      const row = await stack.api.app.prisma.subscription.findUniqueOrThrow({ where: { id: failing.id } });
      expect(row.status).toBe('disabled');
      await waitFor('its delivery to be recorded', () => allAre(stack, ops.id, 1, 'succeeded'));
      expect(stack.receiver.at('/ops')).toHaveLength(1);
      expect(stack.receiver.at('/ops-filtered')).toHaveLength(0);
      expect(await statuses(stack, other.id)).toEqual(new Map());

      const spoofed = await stack.api.app.inject({
        method: 'POST',
        url: '/api/events',
        headers: stack.api.auth('acct-ops'),
        payload: { type: 'subscription.disabled', data: {} },
      });
      expect(spoofed.statusCode).toBe(400);
      expect(spoofed.json().errors[0].pointer).toBe('/type');
    } finally {
      await stack.close();
    }
  });
});

describe('retention and the delivery count', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack('retention');
    await afterStartupRetention(stack);
  });
  afterAll(() => stack.close());

  it('clears previous signing secrets whose overlap has ended, and keeps those still signing', async () => {
    const prisma = stack.api.app.prisma;
    const ended = await stack.subscribe('acct-rot', { callback_url: `${stack.receiver.url}/ended` });
    const overlapping = await stack.subscribe('acct-rot', { callback_url: `${stack.receiver.url}/on` });
    await prisma.$executeRaw`UPDATE subscriptions SET previous_secret = secret,
      previous_secret_expires_at = now() - interval '1 hour' WHERE id = ${ended.id}::uuid`;
    await prisma.$executeRaw`UPDATE subscriptions SET previous_secret = secret,
      previous_secret_expires_at = now() + interval '1 hour' WHERE id = ${overlapping.id}::uuid`;
    const report = await deleteExpiredRows(prisma, { retentionDays: 30 });
    expect(report.previousSecrets).toBe(1);
    const previous = async (id: string) =>
      (await prisma.subscription.findUniqueOrThrow({ where: { id } })).previousSecret;
    expect(await previous(ended.id)).toBeNull();
    expect(await previous(overlapping.id)).not.toBeNull();
  });

  it('deletes idempotency keys kept in PostgreSQL once their 24 hours are over', async () => {
    const prisma = stack.api.app.prisma;
    const row = (keyHash: string, hoursAgo: number) => ({
      accountId: 'acct-idem',
      keyHash,
      eventId: uuidv7(),
      payloadTimestamp: '2026-11-24T00:00:00.000',
      createdAt: new Date(Date.now() - hoursAgo * 3_600_000),
    });
    await prisma.idempotencyKey.createMany({ data: [row('a'.repeat(64), 25), row('b'.repeat(64), 23)] });
    const report = await deleteExpiredRows(prisma, { retentionDays: 30 });
    expect(report.idempotencyKeys).toBe(1);
    expect((await prisma.idempotencyKey.findMany()).map((kept) => kept.keyHash)).toEqual(['b'.repeat(64)]);
  });

  it('counts at most 10,000 deliveries past the requested page', async () => {
    const sub = await stack.subscribe('acct-many', { callback_url: `${stack.receiver.url}/many` });
    const prisma = stack.api.app.prisma;
    await prisma.$executeRaw`
      WITH e AS (
        INSERT INTO events (id, account_id, type, data, occurred_at)
        SELECT uuid_generate_v7(), 'acct-many', 'call.started', '{}', now() FROM generate_series(1, 10050)
        RETURNING id
      )
      INSERT INTO deliveries (id, event_id, subscription_id, status, updated_at)
      SELECT delivery_id(id, ${sub.id}::uuid), id, ${sub.id}::uuid, 'succeeded', now() FROM e`;
    const page = async (n: number) =>
      (
        await stack.api.app.inject({
          url: `${sub.resource_uri}/deliveries?page=${n}&page_size=100`,
          headers: stack.api.auth('acct-many'),
        })
      ).json();
    const first = await page(1);
    expect(first.count).toBe(10_000);
    expect(first.next).toContain('page=2');
    expect((await page(2)).count).toBe(10_050);
    const last = await page(101);
    expect([last.count, last.results.length, last.next]).toEqual([10_050, 50, null]);
    expect((await page(102)).status).toBe(400);
    // Reading on from a delivery instead of paging: each delivery once, in the list's order.
    const seen: string[] = [];
    let before = '';
    for (;;) {
      const chunk = (
        await stack.api.app.inject({
          url: `${sub.resource_uri}/deliveries?page_size=100${before === '' ? '' : `&before=${before}`}`,
          headers: stack.api.auth('acct-many'),
        })
      ).json() as { results: Array<{ id: string }> };
      if (chunk.results.length === 0) break;
      seen.push(...chunk.results.map((d) => d.id));
      before = chunk.results.at(-1)!.id;
    }
    expect(seen).toHaveLength(10_050);
    expect(new Set(seen).size).toBe(10_050);
  });
});
