import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

const backoffMs = 200;
const maxAttempts = 3;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('delivery', {
    DELIVERY_BACKOFF_MS: String(backoffMs),
    DELIVERY_MAX_ATTEMPTS: String(maxAttempts),
    // Far above the 400 ms the slow callbacks below take: on a loaded machine a 500 ms timeout
    // cut one of them short, and its retry was read as the fault under test.
    DELIVERY_TIMEOUT_MS: '1500',
    SUBSCRIPTION_DISABLE_AFTER: '2',
  });
});
afterAll(() => stack.close());

const deliveryOf = (subscriptionId: string, eventId: string) =>
  stack.worker.prisma.delivery.findFirst({ where: { eventId, subscriptionId } });

async function deliveryLog(account: string, subscriptionId: string) {
  const list = await stack.api.app.inject({
    method: 'GET',
    url: `/api/webhooks/${subscriptionId}/deliveries`,
    headers: stack.api.auth(account),
  });
  expect(list.statusCode).toBe(200);
  return list.json();
}

describe('delivery to a callback that answers 200', () => {
  it('POSTs the payload once, signed so that standardwebhooks verifies it', async () => {
    const sub = await stack.subscribe('acct-ok', {
      callback_url: `${stack.receiver.url}/ok`,
      webhook_id: 'crm-calls',
    });
    const published = await stack.publisher.publish({
      accountId: 'acct-ok',
      type: 'call.completed',
      data: { call_id: 'c-1', duration_s: 42 },
      occurredAt: '2026-11-21T10:15:30.123Z',
    });
    const [request] = await waitFor(
      'the delivery',
      () => stack.receiver.at('/ok').length === 1 && stack.receiver.at('/ok'),
    );
    expect(request?.method).toBe('POST');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['user-agent']).toMatch(/^webhook-service\//);
    expect(request?.headers['webhook-id']).toBe(published.id);
    const payload = JSON.parse(request!.body);
    expect(payload).toEqual({
      timestamp: '2026-11-21T10:15:30.123',
      type: 'call.completed',
      webhook_id: 'crm-calls',
      data: { call_id: 'c-1', duration_s: 42 },
    });
    expect(payload.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+$/);
    const verified = new Webhook(sub.secret).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    });
    expect(verified).toEqual(payload);
    const delivery = await waitFor('success recorded', async () => {
      const row = await deliveryOf(sub.id, published.id);
      return row?.status === 'succeeded' && row;
    });
    expect(delivery.attemptsMade).toBe(1);
    await sleep(backoffMs * 3);
    expect(stack.receiver.at('/ok')).toHaveLength(1);
  });

  it('leaves webhook_id out of the payload when the subscription has none', async () => {
    await stack.subscribe('acct-noid', { callback_url: `${stack.receiver.url}/noid` });
    await stack.publisher.publish({ accountId: 'acct-noid', type: 'message.sent', data: { id: 'm' } });
    const [request] = await waitFor(
      'the delivery',
      () => stack.receiver.at('/noid').length === 1 && stack.receiver.at('/noid'),
    );
    expect(Object.keys(JSON.parse(request!.body)).sort()).toEqual(['data', 'timestamp', 'type']);
  });

  it('signs with both secrets for 24 hours after a rotation', async () => {
    const sub = await stack.subscribe('acct-rotate', { callback_url: `${stack.receiver.url}/rotate` });
    const rotated = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${sub.id}/secret/rotate`,
      headers: stack.api.auth('acct-rotate'),
    });
    const { secret: newSecret } = rotated.json();
    await stack.publisher.publish({ accountId: 'acct-rotate', type: 'call.started', data: {} });
    const [request] = await waitFor(
      'the delivery',
      () => stack.receiver.at('/rotate').length === 1 && stack.receiver.at('/rotate'),
    );
    const headers = {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(sub.secret).verify(request!.body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(request!.body, headers)).not.toThrow();
  });
});

describe('retries', () => {
  it('confirms on the second attempt after a 500, with the same webhook-id', async () => {
    stack.receiver.script('/flaky', [500, 200]);
    const sub = await stack.subscribe('acct-flaky', { callback_url: `${stack.receiver.url}/flaky` });
    const { id } = await stack.publisher.publish({ accountId: 'acct-flaky', type: 'call.failed', data: {} });
    await waitFor('success recorded', async () => (await deliveryOf(sub.id, id))?.status === 'succeeded');
    const requests = stack.receiver.at('/flaky');
    expect(requests).toHaveLength(2);
    expect(requests[0]?.headers['webhook-id']).toBe(id);
    expect(requests[1]?.headers['webhook-id']).toBe(id);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(backoffMs);
  });

  it.each([
    ['always answers 500', '/fail500', [500] as const],
    ['answers 204 (only 200 confirms)', '/fail204', [204] as const],
    ['never answers', '/hang', ['hang'] as const],
  ])(
    'a callback that %s is tried exactly DELIVERY_MAX_ATTEMPTS times with growing waits, then left alone',
    async (_, path, answers) => {
      stack.receiver.script(path, [...answers]);
      const account = `acct${path.replace('/', '-')}`;
      const sub = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
      const { id } = await stack.publisher.publish({ accountId: account, type: 'call.started', data: {} });
      await waitFor(
        'the delivery given up',
        async () => (await deliveryOf(sub.id, id))?.status === 'failed',
        20_000,
      );
      await sleep(backoffMs * 2 ** maxAttempts);
      const requests = stack.receiver.at(path);
      expect(requests).toHaveLength(maxAttempts);
      const waits = requests.slice(1).map((r, i) => r.at - requests[i]!.at);
      waits.forEach((wait, i) => expect(wait).toBeGreaterThanOrEqual(backoffMs * 2 ** i));

      const log = await deliveryLog(account, sub.id);
      expect(log.results[0]).toMatchObject({
        status: 'failed',
        attempts_made: maxAttempts,
        next_attempt_at: null,
      });
      const detail = await stack.api.app.inject({
        method: 'GET',
        url: log.results[0].resource_uri,
        headers: stack.api.auth(account),
      });
      const attempts = detail.json().attempts;
      expect(attempts.map((a: { attempt_number: number }) => a.attempt_number)).toEqual([1, 2, 3]);
      if (answers[0] === 'hang') expect(attempts[0]).toMatchObject({ status_code: null, error: 'timeout' });
      else expect(attempts[0]).toMatchObject({ status_code: answers[0], error: 'http_status' });
      if (answers[0] === 500) expect(attempts[0].response_body).toBe('answer 500');
    },
  );

  it('redelivers a failed delivery with a fresh round when asked through the API', async () => {
    stack.receiver.script('/later', [500, 500, 500, 200]);
    const sub = await stack.subscribe('acct-later', { callback_url: `${stack.receiver.url}/later` });
    const { id } = await stack.publisher.publish({ accountId: 'acct-later', type: 'call.started', data: {} });
    await waitFor('given up', async () => (await deliveryOf(sub.id, id))?.status === 'failed', 20_000);
    const [delivery] = (await deliveryLog('acct-later', sub.id)).results;
    const retry = await stack.api.app.inject({
      method: 'POST',
      url: `${delivery.resource_uri}/retry`,
      headers: stack.api.auth('acct-later'),
    });
    expect(retry.statusCode).toBe(202);
    expect(retry.json().status).toBe('pending');
    await waitFor('success recorded', async () => (await deliveryOf(sub.id, id))?.status === 'succeeded');
    expect(stack.receiver.at('/later')).toHaveLength(4);
    const again = await stack.api.app.inject({
      method: 'POST',
      url: `${delivery.resource_uri}/retry`,
      headers: stack.api.auth('acct-later'),
    });
    expect(again.statusCode).toBe(409);
  });

  it('disables a subscription after SUBSCRIPTION_DISABLE_AFTER deliveries failed for good, until set active again', async () => {
    stack.receiver.script('/broken', [500]);
    const sub = await stack.subscribe('acct-broken', { callback_url: `${stack.receiver.url}/broken` });
    for (let i = 0; i < 2; i++) {
      const { id } = await stack.publisher.publish({
        accountId: 'acct-broken',
        type: 'call.started',
        data: { i },
      });
      await waitFor('given up', async () => (await deliveryOf(sub.id, id))?.status === 'failed', 20_000);
    }
    const read = await stack.api.app.inject({
      method: 'GET',
      url: sub.resource_uri,
      headers: stack.api.auth('acct-broken'),
    });
    expect(read.json().status).toBe('disabled');
    const before = stack.receiver.at('/broken').length;
    await stack.publisher.publish({ accountId: 'acct-broken', type: 'call.started', data: { i: 'ignored' } });
    await sleep(500);
    expect(stack.receiver.at('/broken')).toHaveLength(before);

    stack.receiver.script('/broken', [200]);
    const put = await stack.api.app.inject({
      method: 'PUT',
      url: sub.resource_uri,
      headers: stack.api.auth('acct-broken'),
      payload: { status: 'active' },
    });
    expect(put.json().status).toBe('active');
    const { id } = await stack.publisher.publish({
      accountId: 'acct-broken',
      type: 'call.started',
      data: { i: 'back' },
    });
    await waitFor('delivered again', async () => (await deliveryOf(sub.id, id))?.status === 'succeeded');
  });

  it('drops the pending deliveries of a deleted subscription', async () => {
    stack.receiver.script('/deleted', [500]);
    const sub = await stack.subscribe('acct-deleted', { callback_url: `${stack.receiver.url}/deleted` });
    await stack.publisher.publish({ accountId: 'acct-deleted', type: 'call.started', data: {} });
    await waitFor('first attempt', () => stack.receiver.at('/deleted').length === 1);
    const deleted = await stack.api.app.inject({
      method: 'DELETE',
      url: sub.resource_uri,
      headers: stack.api.auth('acct-deleted'),
    });
    expect(deleted.statusCode).toBe(204);
    await sleep(backoffMs * 2 ** maxAttempts);
    expect(stack.receiver.at('/deleted')).toHaveLength(1);
  });

  it('records the other deliveries of a batch when one subscription is deleted during its attempt', async () => {
    stack.receiver.script('/gone', [{ status: 200, afterMs: 400 }]);
    stack.receiver.script('/stays', [{ status: 200, afterMs: 400 }]);
    const gone = await stack.subscribe('acct-gone', { callback_url: `${stack.receiver.url}/gone` });
    const stays = await stack.subscribe('acct-stays', { callback_url: `${stack.receiver.url}/stays` });
    await stack.publisher.publish({ accountId: 'acct-gone', type: 'call.started', data: {} });
    const { id } = await stack.publisher.publish({ accountId: 'acct-stays', type: 'call.started', data: {} });
    await waitFor(
      'both attempts under way',
      () => stack.receiver.at('/gone').length === 1 && stack.receiver.at('/stays').length === 1,
    );
    await stack.api.app.inject({
      method: 'DELETE',
      url: gone.resource_uri,
      headers: stack.api.auth('acct-gone'),
    });
    const delivery = await waitFor('the other delivery recorded', async () => {
      const row = await deliveryOf(stays.id, id);
      return row?.status === 'succeeded' && row;
    });
    expect(delivery.attemptsMade).toBe(1);
    await sleep(backoffMs * 3);
    expect(stack.receiver.at('/stays')).toHaveLength(1);
    expect(stack.receiver.at('/gone')).toHaveLength(1);
  });
  it('records an answer with NUL bytes and invalid UTF-8 without failing the deliveries batched with it', async () => {
    stack.receiver.script('/nul-body', [
      { status: 200, afterMs: 100, body: Buffer.from([0x6f, 0x00, 0x6b, 0xff]) },
    ]);
    stack.receiver.script('/neighbour', [{ status: 200, afterMs: 100 }]);
    const poisoned = await stack.subscribe('acct-nul', { callback_url: `${stack.receiver.url}/nul-body` });
    const healthy = await stack.subscribe('acct-neighbour', {
      callback_url: `${stack.receiver.url}/neighbour`,
    });
    const [a, b] = await Promise.all([
      stack.publisher.publish({ accountId: 'acct-nul', type: 'call.started', data: {} }),
      stack.publisher.publish({ accountId: 'acct-neighbour', type: 'call.started', data: {} }),
    ]);
    for (const [sub, event] of [
      [poisoned, a],
      [healthy, b],
    ] as const) {
      const row = await waitFor('the delivery recorded', async () => {
        const found = await deliveryOf(sub.id, event.id);
        return found?.status === 'succeeded' && found;
      });
      expect(row.attemptsMade).toBe(1);
    }
    const [attempt] = await stack.worker.prisma.deliveryAttempt.findMany({
      where: { delivery: { subscriptionId: poisoned.id } },
    });
    expect(attempt?.responseBody).toBe('ok\ufffd');
    await sleep(backoffMs * 3);
    expect(stack.receiver.at('/nul-body')).toHaveLength(1);
    expect(stack.receiver.at('/neighbour')).toHaveLength(1);
  });
});

describe('fan-out', () => {
  it('sends each kind only to the subscriptions that receive it, and never to another account', async () => {
    await stack.subscribe('acct-fan', { callback_url: `${stack.receiver.url}/fan-all` });
    await stack.subscribe('acct-fan', { callback_url: `${stack.receiver.url}/fan-calls` }, 'calls');
    await stack.subscribe('acct-fan', { callback_url: `${stack.receiver.url}/fan-messages` }, 'messages');
    await stack.subscribe('acct-other', { callback_url: `${stack.receiver.url}/fan-other` });
    const call = await stack.publisher.publish({ accountId: 'acct-fan', type: 'call.started', data: {} });
    const message = await stack.publisher.publish({
      accountId: 'acct-fan',
      type: 'message.received',
      data: {},
    });
    await waitFor(
      'all deliveries',
      () => stack.receiver.at('/fan-all').length === 2 && stack.receiver.at('/fan-messages').length === 1,
    );
    await waitFor('call delivery', () => stack.receiver.at('/fan-calls').length === 1);
    await sleep(300);
    expect(stack.receiver.at('/fan-calls').map((r) => r.headers['webhook-id'])).toEqual([call.id]);
    expect(stack.receiver.at('/fan-messages').map((r) => r.headers['webhook-id'])).toEqual([message.id]);
    expect(stack.receiver.at('/fan-other')).toHaveLength(0);
  });

  it('enqueues an idempotency key once within 24 hours', async () => {
    await stack.subscribe('acct-idem', { callback_url: `${stack.receiver.url}/idem` });
    const first = await stack.publisher.publish({
      accountId: 'acct-idem',
      type: 'message.sent',
      data: { n: 1 },
      idempotencyKey: 'k-1',
    });
    const second = await stack.publisher.publish({
      accountId: 'acct-idem',
      type: 'message.sent',
      data: { n: 2 },
      idempotencyKey: 'k-1',
    });
    expect(second).toEqual({ id: first.id, timestamp: first.timestamp, duplicate: true });
    const other = await stack.publisher.publish({
      accountId: 'acct-idem',
      type: 'message.sent',
      data: { n: 3 },
      idempotencyKey: 'k-2',
    });
    expect(other.id).not.toBe(first.id);
    await waitFor('two deliveries', () => stack.receiver.at('/idem').length === 2);
    await sleep(300);
    expect(
      stack.receiver
        .at('/idem')
        .map((r) => JSON.parse(r.body).data.n)
        .sort(),
    ).toEqual([1, 3]);
  });
});
