import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createWebhookClient,
  mayRetry,
  retryAfterSpreadMs,
  verifyWebhook,
  WebhookVerificationError,
  type RetryPolicy,
  type WebhookClient,
} from '@webhooks/client';
import { startReceiver, type Receiver } from '../scripts/lib/receiver.js';
import { documentPath, documentSource, schemaPath, schemaSource } from '../scripts/openapi.js';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;
let client: WebhookClient;
beforeAll(async () => {
  // One attempt per round, so a failing callback gives a failed delivery to retry at once.
  stack = await startTestStack('client', { DELIVERY_MAX_ATTEMPTS: '1' });
  await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = stack.api.app.server.address() as AddressInfo;
  client = createWebhookClient({ baseUrl: `http://127.0.0.1:${port}/`, token: stack.api.token('acme') });
});
afterAll(() => stack.close());

describe('packages/client, generated from the OpenAPI document', () => {
  it('is generated from the document the API serves (else run `pnpm openapi`)', async () => {
    const served = (await stack.api.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(await readFile(documentPath, 'utf8')).toBe(await documentSource(served));
  });

  it('carries the types openapi-typescript makes of the committed document (else run `pnpm openapi`)', async () => {
    const committed = JSON.parse(await readFile(documentPath, 'utf8'));
    expect(await readFile(schemaPath, 'utf8')).toBe(await schemaSource(committed));
  });

  it('subscribes, publishes, reads the deliveries and verifies what the callback received', async () => {
    const created = await client.POST('/api/webhooks', {
      body: { callback_url: `${stack.receiver.url}/client`, webhook_id: 'sdk' },
    });
    expect(created.response.status).toBe(201);
    const subscription = created.data!;
    const published = await client.POST('/api/events', {
      body: { type: 'message.sent', data: { message_id: 'm-1' } },
    });
    expect(published.response.status).toBe(202);

    await waitFor('the delivery', () => stack.receiver.at('/client').length === 1);
    const [request] = stack.receiver.at('/client');
    expect(verifyWebhook(subscription.secret, request!.body, request!.headers)).toEqual({
      timestamp: published.data!.timestamp,
      type: 'message.sent',
      webhook_id: 'sdk',
      data: { message_id: 'm-1' },
    });
    expect(() =>
      verifyWebhook(subscription.secret, request!.body.replace('m-1', 'm-2'), request!.headers),
    ).toThrow(WebhookVerificationError);

    await waitFor('the succeeded delivery in the log', async () => {
      const { data } = await client.GET('/api/webhooks/{id}/deliveries', {
        params: { path: { id: subscription.id }, query: { status: 'succeeded' } },
      });
      return data!.count === 1;
    });
  });

  it('lists a failed delivery and retries it until the callback confirms', async () => {
    stack.receiver.script('/flaky', [500, 200]);
    const { data: subscription } = await client.POST('/api/webhooks/messages', {
      body: { callback_url: `${stack.receiver.url}/flaky` },
    });
    const id = subscription!.id;
    await client.POST('/api/events', { body: { type: 'message.failed', data: { message_id: 'm-2' } } });
    const failed = await waitFor('the failed delivery', async () => {
      const { data } = await client.GET('/api/webhooks/{id}/deliveries', {
        params: { path: { id }, query: { status: 'failed' } },
      });
      return data!.results[0];
    });
    const retried = await client.POST('/api/webhooks/{id}/deliveries/{delivery_id}/retry', {
      params: { path: { id, delivery_id: failed.id } },
    });
    expect(retried.response.status).toBe(202);
    await waitFor('the retried delivery to succeed', async () => {
      const { data } = await client.GET('/api/webhooks/{id}/deliveries/{delivery_id}', {
        params: { path: { id, delivery_id: failed.id } },
      });
      return data!.status === 'succeeded';
    });
    expect(stack.receiver.at('/flaky').map((request) => JSON.parse(request.body).data)).toEqual([
      { message_id: 'm-2' },
      { message_id: 'm-2' },
    ]);
  });

  it('surfaces a failed call as its problem details, naming the field', async () => {
    const { data, error, response } = await client.POST('/api/webhooks', {
      body: { callback_url: 'not a url' },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(error).toMatchObject({ status: 400, errors: [{ pointer: '/callback_url' }] });
  });
});

describe('docs/api.md, "Client library"', () => {
  it('shows the example that compiles with the build, line for line', async () => {
    const root = repositoryRoot();
    const example = await readFile(
      path.join(root, 'packages/client/examples/subscribe-and-receive.ts'),
      'utf8',
    );
    const readme = await readFile(path.join(root, 'docs/api.md'), 'utf8');
    expect(readme).toContain(`\n\`\`\`ts\n${example}\`\`\`\n`);
  });
});

describe("the client's retries", () => {
  let api: Receiver;
  beforeAll(async () => {
    api = await startReceiver();
  });
  afterAll(() => api.close());
  const clientOf = (retry?: RetryPolicy) =>
    createWebhookClient({ baseUrl: api.url, token: 't', ...(retry === undefined ? {} : { retry }) });
  const json = { 'content-type': 'application/json' };
  const overloaded = (retryAfter: string) => ({
    status: 503,
    headers: { 'content-type': 'application/problem+json', 'retry-after': retryAfter },
    body: JSON.stringify({ type: 'about:blank', title: 'overloaded', status: 503 }),
  });
  const accepted = {
    status: 202,
    headers: json,
    body: JSON.stringify({ id: 'e-1', timestamp: 't', duplicate: false }),
  };
  const publish = (client: WebhookClient, headers: Record<string, string> = {}) =>
    client.POST('/api/events', { body: { type: 'message.sent', data: { message_id: 'm-1' } }, headers });

  it('sends a publish with an idempotency key again after the Retry-After of a 503, with the same body', async () => {
    api.script('/api/events', [overloaded('1'), accepted]);
    const answer = await publish(clientOf(), { 'idempotency-key': 'k-1' });
    expect(answer.response.status).toBe(202);
    const [first, second] = api.at('/api/events');
    expect(api.at('/api/events')).toHaveLength(2);
    expect(second!.body).toBe(first!.body);
    expect(second!.headers['idempotency-key']).toBe('k-1');
    // Not before the second it was told to wait.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
    api.requests.length = 0;
  });

  it('sends a publish without an idempotency key once, and answers with the 503', async () => {
    api.script('/api/events', [overloaded('1'), accepted]);
    const answer = await publish(clientOf());
    expect(answer.response.status).toBe(503);
    expect(api.at('/api/events')).toHaveLength(1);
    api.requests.length = 0;
  });

  it('gives up after its retries and answers with the last response', async () => {
    api.script('/api/webhooks', [overloaded('0')]);
    const answer = await clientOf({ limit: 2 }).GET('/api/webhooks');
    expect(answer.response.status).toBe(503);
    expect(api.at('/api/webhooks')).toHaveLength(3);
    api.requests.length = 0;
  });
});

describe('retryAfterSpreadMs and mayRetry', () => {
  it('spreads a Retry-After by up to half of it, never less than asked', () => {
    expect(retryAfterSpreadMs(1_000, 0)).toBe(0);
    expect(retryAfterSpreadMs(1_000, 0.999)).toBe(500);
  });
  it('retries only what is safe to send twice', () => {
    const request = (method: string, headers: Record<string, string> = {}) =>
      new Request('http://x/', { method, headers });
    expect(mayRetry(request('GET'))).toBe(true);
    expect(mayRetry(request('DELETE'))).toBe(true);
    expect(mayRetry(request('POST'))).toBe(false);
    expect(mayRetry(request('POST', { 'idempotency-key': 'k' }))).toBe(true);
    expect(mayRetry(request('PATCH'))).toBe(false);
  });
});
