import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createWebhookClient,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookClient,
} from '@webhooks/client';
import { documentPath, documentSource, schemaPath, schemaSource } from '../scripts/openapi.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from './support/wait.js';

let stack: TestStack;
let client: WebhookClient;
beforeAll(async () => {
  stack = await startTestStack('client');
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
