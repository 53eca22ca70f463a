/**
 * Custom headers per subscription, through the real API, worker and a receiver behind a "gateway"
 * that refuses any request without its API key: set on create and update, stored sealed, shown
 * masked except to the owner who asks for them, sent with every delivery and with the callback's
 * challenge; refused, naming the header, when they would break delivery or signing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { verifyWebhook } from '@webhooks/client';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('custom-headers', {
    DELIVERY_MAX_ATTEMPTS: '1',
    CALLBACK_VERIFICATION: 'challenge',
  });
});
afterAll(() => stack.close());

const gatewayKey = 'Bearer gateway-key-1';

/** A callback behind a gateway: 401 without the key; with it, the challenge's answer, else 200. */
const behindGateway = (path: string) =>
  stack.receiver.script(path, [
    (request) => {
      if (request.headers.authorization !== gatewayKey) return 401;
      const body = JSON.parse(request.body) as { type: string; data: { challenge?: string } };
      return body.type === 'webhook.verification'
        ? { status: 200, body: JSON.stringify({ challenge: body.data.challenge }) }
        : 200;
    },
  ]);

const api = (method: 'GET' | 'POST' | 'PUT', url: string, account: string, payload?: object) =>
  stack.api.app.inject({
    method,
    url,
    headers: stack.api.auth(account),
    ...(payload === undefined ? {} : { payload }),
  });

describe('custom headers', () => {
  it('reach a callback behind a gateway that requires them, challenge included, shown masked', async () => {
    behindGateway('/gateway');
    const created = await api('POST', '/api/webhooks', 'acct-gw', {
      callback_url: `${stack.receiver.url}/gateway`,
      headers: { Authorization: gatewayKey, 'X-Tenant': 'acme' },
    });
    expect(created.statusCode).toBe(201);
    const subscription = created.json();
    expect(subscription.headers).toEqual({ authorization: '********', 'x-tenant': '********' });
    // The challenge passed the gateway: the subscription became active.
    await waitFor(
      'the callback verified',
      async () =>
        (await api('GET', `/api/webhooks/${subscription.id}`, 'acct-gw')).json().status === 'active',
    );

    const { id } = await stack.publisher.publish({
      accountId: 'acct-gw',
      type: 'call.started',
      data: { n: 1 },
    });
    await waitFor('the delivery', () =>
      stack.receiver.at('/gateway').some((r) => r.headers['webhook-id'] === id),
    );
    const delivered = stack.receiver.at('/gateway').find((r) => r.headers['webhook-id'] === id)!;
    expect(delivered.headers['x-tenant']).toBe('acme');
    expect(verifyWebhook(subscription.secret, delivered.body, delivered.headers).data).toEqual({ n: 1 });
    await waitFor('the delivery succeeded', async () => {
      const row = await stack.api.app.prisma.delivery.findFirst({ where: { eventId: id } });
      return row?.status === 'succeeded';
    });

    // Stored sealed, bound to the subscription; read back in clear only when asked, never cached.
    const stored = await stack.api.app.prisma.subscription.findUniqueOrThrow({
      where: { id: subscription.id },
    });
    expect(stored.headers).toMatch(/^enc:/);
    expect(stored.headers).not.toContain('gateway-key');
    const read = await api('GET', `/api/webhooks/${subscription.id}/headers`, 'acct-gw');
    expect(read.json()).toEqual({ headers: { authorization: gatewayKey, 'x-tenant': 'acme' } });
    expect(read.headers['cache-control']).toBe('no-store');
    expect((await api('GET', `/api/webhooks/${subscription.id}/headers`, 'acct-other')).statusCode).toBe(404);
  });

  it('without them the gateway refuses the delivery; set by an update, the next one passes', async () => {
    behindGateway('/gateway-later');
    const created = await api('POST', '/api/webhooks', 'acct-gw2', {
      callback_url: `${stack.receiver.url}/gateway-later`,
      headers: { authorization: gatewayKey },
    });
    const { id: subscriptionId } = created.json();
    await waitFor(
      'the callback verified',
      async () =>
        (await api('GET', `/api/webhooks/${subscriptionId}`, 'acct-gw2')).json().status === 'active',
    );
    const cleared = await api('PUT', `/api/webhooks/${subscriptionId}`, 'acct-gw2', { headers: null });
    expect(cleared.json().headers).toEqual({});
    const first = await stack.publisher.publish({ accountId: 'acct-gw2', type: 'call.started', data: {} });
    await waitFor('the refused delivery failed', async () => {
      const row = await stack.api.app.prisma.delivery.findFirst({ where: { eventId: first.id } });
      return row?.status === 'failed' && row.lastStatusCode === 401;
    });
    await api('PUT', `/api/webhooks/${subscriptionId}`, 'acct-gw2', {
      headers: { authorization: gatewayKey },
    });
    const second = await stack.publisher.publish({ accountId: 'acct-gw2', type: 'call.started', data: {} });
    await waitFor('the delivery succeeded', async () => {
      const row = await stack.api.app.prisma.delivery.findFirst({ where: { eventId: second.id } });
      return row?.status === 'succeeded';
    });
  });

  it.each([
    [{ 'webhook-signature': 'v1,forged' }, '/headers/webhook-signature', 'set by the service'],
    [{ Host: 'evil.example' }, '/headers/Host', 'set by the service'],
    [{ 'content-length': '1' }, '/headers/content-length', 'set by the service'],
    [{ 'bad name': 'x' }, '/headers/bad name', 'HTTP token'],
    [{ 'x-split': 'a\r\nx-injected: 1' }, '/headers/x-split', 'no control character'],
    [{ 'x-a': '1', 'X-A': '2' }, '/headers/X-A', 'given twice'],
    [Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])), '/headers', 'more than 20'],
  ])('refuses %j, naming %s, and creates nothing', async (headers, pointer, detail) => {
    const before = await stack.api.app.prisma.subscription.count({ where: { accountId: 'acct-bad' } });
    const answer = await api('POST', '/api/webhooks', 'acct-bad', {
      callback_url: `${stack.receiver.url}/never`,
      headers,
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ pointer: expect.stringContaining(pointer) })]),
    );
    expect(answer.json().detail).toContain(detail);
    expect(await stack.api.app.prisma.subscription.count({ where: { accountId: 'acct-bad' } })).toBe(before);
  });
});
