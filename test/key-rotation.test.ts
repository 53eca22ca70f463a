/**
 * Rotating SECRETS_ENCRYPTION_KEY as docs/security.md says: subscriptions holding every kind of
 * sealed value (signing secret, custom headers, HTTP Basic and OAuth 2.0 credentials, a client
 * certificate, an SQS destination's access keys) are written under key 1; `db:migrate`'s reseal under key 2 reports each column and
 * nothing left; a worker given key 2 alone then delivers to every one of them, credentials included.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { resealSecrets } from '@webhooks/db';
import { createSecretBox, type EventPublisher } from '@webhooks/shared';
import { loadWorkerConfig, startWorker, type RunningWorker } from '@webhooks/worker';
import { testCertificates } from './support/certificates.js';
import {
  publisherFor,
  startTestApi,
  subscribeThrough,
  testEncryptionKey,
  testEnv,
  type TestApi,
} from './support/api.js';
import { waitFor } from '../scripts/lib/wait.js';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startMoto, type Moto } from '../scripts/lib/moto.js';

const certificates = testCertificates();
const oldKey = Buffer.from(testEncryptionKey, 'base64');
const newKey = Buffer.alloc(32, 11);

/** What the receiver saw of each request: path, client certificate, `Authorization`, the custom header. */
const received: Array<{
  path: string;
  client: string;
  authorization?: string;
  tenant?: string;
  body: string;
  headers: Record<string, string>;
}> = [];
let receiver: Server;
let receiverUrl: string;
let tokenServer: HttpServer;
let tokenUrl: string;
let api: TestApi;
let publisher: EventPublisher;
let env: Record<string, string>;
let newWorker: RunningWorker | null = null;
let moto: Moto;

beforeAll(async () => {
  const ca = certificates.selfSigned('ca', '/CN=Rotation CA');
  const server = certificates.issue('server', ca, '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1');
  receiver = createServer(
    {
      key: server.key,
      cert: server.certificate,
      ca: ca.certificate,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const peer = (request.socket as TLSSocket).getPeerCertificate();
        received.push({
          path: request.url ?? '',
          client: String(peer.subject?.CN),
          ...(request.headers.authorization === undefined
            ? {}
            : { authorization: request.headers.authorization }),
          ...(request.headers['x-tenant'] === undefined
            ? {}
            : { tenant: String(request.headers['x-tenant']) }),
          body,
          headers: request.headers as Record<string, string>,
        });
        response.end('ok');
      });
    },
  );
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  tokenServer = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const ok =
        request.headers.authorization === `Basic ${Buffer.from('hooks:tokensecret').toString('base64')}`;
      response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify(ok ? { access_token: 'tok-rotated', token_type: 'Bearer', expires_in: 3600 } : {}),
      );
    });
  });
  tokenServer.listen(0, '127.0.0.1');
  await once(tokenServer, 'listening');
  tokenUrl = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;
  moto = await startMoto();
  env = {
    CALLBACK_ALLOW_PRIVATE: 'true',
    CALLBACK_CA_FILE: ca.file,
    DELIVERY_BACKOFF_MS: '200',
    DESTINATION_BROKERS: JSON.stringify({ aws: { type: 'aws', region: 'eu-west-1', endpoint: moto.url } }),
  };
  api = await startTestApi('key-rotation', env);
  publisher = publisherFor(api);
}, 60_000);
afterAll(async () => {
  await newWorker?.close();
  await publisher.close();
  await api.close();
  receiver.close();
  tokenServer.close();
  certificates.remove();
  await moto.stop();
});

describe('key rotation', () => {
  it('reseals every sealed column under the new key, and a worker with the new key alone delivers to each', async () => {
    const client = certificates.issue(
      'client',
      certificates.selfSigned('client-ca', '/CN=Client CA'),
      '/CN=rotated-sender',
      'extendedKeyUsage=clientAuth',
    );
    const account = 'acct-rotation';
    const basic = await subscribeThrough(api, account, {
      callback_url: `${receiverUrl}/basic`,
      headers: { 'X-Tenant': 'acme' },
      auth: { type: 'basic', username: 'user', password: 'pass' },
      client_certificate: { certificate: client.certificate, key: client.key },
    });
    const oauth = await subscribeThrough(api, account, {
      callback_url: `${receiverUrl}/oauth`,
      auth: {
        type: 'oauth2_client_credentials',
        token_url: tokenUrl,
        client_id: 'hooks',
        client_secret: 'tokensecret',
      },
    });
    const sqs = new SQSClient({ region: 'eu-west-1', endpoint: moto.url });
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'wh-rotated' }))).QueueUrl!;
    await subscribeThrough(api, account, {
      destination: {
        type: 'sqs',
        broker: 'aws',
        queue: 'wh-rotated',
        credentials: {
          type: 'access_key',
          access_key_id: 'AKIAIOSFODNN7EXAMPLE',
          secret_access_key: 'keysecret',
        },
      },
    });
    // A rotated signing secret: the previous one is sealed too.
    const rotated = await api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${oauth.id}/secret/rotate`,
      headers: api.auth(account),
    });
    expect(rotated.statusCode).toBe(200);

    const report = await resealSecrets(api.database.url, createSecretBox([newKey, oldKey]));
    expect(report).toEqual({
      rows: 3,
      resealed: {
        secret: 3,
        previous_secret: 1,
        headers: 1,
        client_tls: 1,
        auth: 2,
        destination_credentials: 1,
      },
      left: 0,
    });
    expect((await resealSecrets(api.database.url, createSecretBox([newKey, oldKey]))).rows).toBe(0);

    // The old key is dropped: the worker knows the new one alone.
    newWorker = startWorker(
      loadWorkerConfig(
        testEnv(api.database.url, api.prefix, { ...env, SECRETS_ENCRYPTION_KEY: newKey.toString('base64') }),
      ),
      pino({ level: 'silent' }),
    );
    await publisher.publish({ accountId: account, type: 'call.completed', data: { call_id: 'rotated' } });
    await waitFor('both deliveries', () => received.length >= 2);
    // The access keys opened under the new key alone: the message is written.
    await waitFor('the queue’s message', async () => {
      const answer = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
      return (answer.Messages ?? []).length > 0;
    });
    sqs.destroy();
    const byPath = new Map(received.map((request) => [request.path, request]));
    expect(byPath.get('/basic')).toMatchObject({
      client: 'rotated-sender',
      authorization: `Basic ${Buffer.from('user:pass').toString('base64')}`,
      tenant: 'acme',
    });
    expect(byPath.get('/oauth')).toMatchObject({ authorization: 'Bearer tok-rotated' });
    const oauthRequest = byPath.get('/oauth')!;
    expect(() =>
      new Webhook(rotated.json().secret as string).verify(oauthRequest.body, oauthRequest.headers),
    ).not.toThrow();
    expect(() => new Webhook(oauth.secret).verify(oauthRequest.body, oauthRequest.headers)).not.toThrow();
    expect(() =>
      new Webhook(basic.secret).verify(byPath.get('/basic')!.body, byPath.get('/basic')!.headers),
    ).not.toThrow();
  }, 60_000);
});
