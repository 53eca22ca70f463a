/**
 * Receivers behind HTTP Basic or OAuth 2.0 client credentials: the real API and worker, a token
 * server of the test's own and the receiver, on 127.0.0.1.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort } from '../scripts/lib/services.js';
import { waitFor } from '../scripts/lib/wait.js';
import { startTestStack, type TestStack } from './support/stack.js';

let stack: TestStack;
let tokenServer: Server;
let tokenUrl: string;
/** Token requests the server answered, with their form parameters. */
const issued: URLSearchParams[] = [];
const clientAuthorization = `Basic ${Buffer.from('hooks:s3cret').toString('base64')}`;

beforeAll(async () => {
  stack = await startTestStack('receiver-auth', { DELIVERY_MAX_ATTEMPTS: '1' });
  tokenServer = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.headers.authorization !== clientAuthorization) {
        response.writeHead(401, {
          'content-type': 'application/json',
          'www-authenticate': 'Basic realm="token"',
        });
        response.end(JSON.stringify({ error: 'invalid_client' }));
        return;
      }
      const parameters = new URLSearchParams(body);
      issued.push(parameters);
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      response.end(
        JSON.stringify({ access_token: `tok-${issued.length}`, token_type: 'Bearer', expires_in: 3600 }),
      );
    });
  });
  tokenServer.listen(0, '127.0.0.1');
  await once(tokenServer, 'listening');
  tokenUrl = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;
});
afterAll(async () => {
  tokenServer.close();
  await stack.close();
});

const oauth = (url = tokenUrl) => ({
  type: 'oauth2_client_credentials',
  token_url: url,
  client_id: 'hooks',
  client_secret: 's3cret',
  scope: 'webhooks:receive',
});

/** Publishes one event to `account` and waits for its delivery to `subscriptionId` to end. */
async function deliverOne(account: string, subscriptionId: string) {
  await stack.publisher.publish({ accountId: account, type: 'call.completed', data: { call_id: 'c' } });
  return waitFor('the delivery ended', async () => {
    const rows = await stack.worker.prisma.delivery.findMany({
      where: { subscriptionId, status: { not: 'pending' } },
      include: { attempts: true },
    });
    return rows.length > 0 ? rows[0] : undefined;
  });
}

describe('auth: how the service authenticates to a receiver', () => {
  it('sends an OAuth 2.0 token of the client credentials grant, one token for many deliveries', async () => {
    const before = issued.length;
    const created = await stack.subscribe('auth-oauth', {
      callback_url: `${stack.receiver.url}/oauth`,
      auth: oauth(),
    });
    expect(created).toMatchObject({
      auth: {
        type: 'oauth2_client_credentials',
        token_url: tokenUrl,
        client_id: 'hooks',
        client_secret: '********',
      },
    });
    for (let i = 0; i < 3; i += 1)
      await stack.publisher.publish({
        accountId: 'auth-oauth',
        type: 'call.completed',
        data: { call_id: `c-${i}` },
      });
    await waitFor('three deliveries', () => stack.receiver.at('/oauth').length === 3);
    expect(stack.receiver.at('/oauth').map((r) => r.headers.authorization)).toEqual(
      Array(3).fill(`Bearer tok-${before + 1}`),
    );
    expect(issued.length).toBe(before + 1);
    expect(Object.fromEntries(issued[before]!)).toEqual({
      grant_type: 'client_credentials',
      scope: 'webhooks:receive',
    });
  });

  it('gets a fresh token once when the receiver answers 401, within the same attempt', async () => {
    stack.receiver.script('/oauth-401', [401, 200]);
    const { id } = await stack.subscribe('auth-401', {
      callback_url: `${stack.receiver.url}/oauth-401`,
      auth: oauth(),
    });
    const before = issued.length;
    const delivery = await deliverOne('auth-401', id);
    expect(delivery).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
    expect(stack.receiver.at('/oauth-401').map((r) => r.headers.authorization)).toEqual([
      `Bearer tok-${before + 1}`,
      `Bearer tok-${before + 2}`,
    ]);
  });

  it('fails the attempt, naming the token URL, when no token can be had; nothing is sent', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/token`;
    const unreachable = await stack.subscribe('auth-down', {
      callback_url: `${stack.receiver.url}/oauth-down`,
      auth: oauth(closed),
    });
    const delivery = await deliverOne('auth-down', unreachable.id);
    expect(delivery).toMatchObject({ status: 'failed', lastError: 'auth_failed' });
    expect(delivery!.attempts[0]!.errorMessage).toBe(`the token URL ${closed} could not be reached`);

    const refused = await stack.subscribe('auth-refused', {
      callback_url: `${stack.receiver.url}/oauth-refused`,
      auth: { ...oauth(), client_secret: 'wrong' },
    });
    const refusedDelivery = await deliverOne('auth-refused', refused.id);
    expect(refusedDelivery!.attempts[0]!.errorMessage).toMatch(
      new RegExp(`^the token URL ${tokenUrl} answered 401`),
    );
    expect(stack.receiver.at('/oauth-down')).toHaveLength(0);
    expect(stack.receiver.at('/oauth-refused')).toHaveLength(0);
  });

  it('asks for a new token when the client secret changes, never reusing the old one', async () => {
    const { id } = await stack.subscribe('auth-secret-change', {
      callback_url: `${stack.receiver.url}/oauth-secret`,
      auth: oauth(),
    });
    expect(await deliverOne('auth-secret-change', id)).toMatchObject({ status: 'succeeded' });
    const changed = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${id}`,
      headers: stack.api.auth('auth-secret-change'),
      payload: { auth: { ...oauth(), client_secret: 'revoked' } },
    });
    expect(changed.statusCode).toBe(200);
    await stack.publisher.publish({ accountId: 'auth-secret-change', type: 'call.completed', data: {} });
    await waitFor('the second delivery ended', async () => {
      const rows = await stack.worker.prisma.delivery.findMany({ where: { subscriptionId: id } });
      return rows.length === 2 && rows.every((row) => row.status !== 'pending');
    });
    // The token server refuses the new secret: the cached token of the old one is not sent.
    expect(stack.receiver.at('/oauth-secret')).toHaveLength(1);
  });

  it('sends HTTP Basic credentials, shows them masked, and removes them on null', async () => {
    const created = await stack.subscribe('auth-basic', {
      callback_url: `${stack.receiver.url}/basic`,
      auth: { type: 'basic', username: 'user', password: 'pass' },
    });
    expect(created.auth).toEqual({ type: 'basic', username: 'user', password: '********' });
    await deliverOne('auth-basic', created.id);
    expect(stack.receiver.at('/basic')[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
    );

    const cleared = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth('auth-basic'),
      payload: { auth: null },
    });
    expect(cleared.json().auth).toBeNull();
  });

  it('refuses a token URL a callback could not have, naming /auth/token_url, and changes nothing', async () => {
    const response = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('auth-ssrf'),
      payload: { callback_url: `${stack.receiver.url}/ssrf`, auth: oauth('http://127.0.0.1:22/token') },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0].pointer).toBe('/auth/token_url');
    const listed = await stack.api.app.inject({
      method: 'GET',
      url: '/api/webhooks',
      headers: stack.api.auth('auth-ssrf'),
    });
    expect(listed.json().count).toBe(0);
  });
});
