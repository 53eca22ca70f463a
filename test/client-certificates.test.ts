/**
 * Client certificates (mutual TLS) per subscription, through the real API and worker, to a
 * receiver on `node:https` that asks for a client certificate and refuses a connection without one
 * its CA signed (`requestCert`, `rejectUnauthorized`). The test's own CA signs the receiver's and
 * the client's certificates (openssl), and the worker trusts it through CALLBACK_CA_FILE.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testCertificates, type TestCertificate } from './support/certificates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

const certificates = testCertificates();

let stack: TestStack;
let receiver: Server;
let receiverUrl: string;
/** The subject CN of the client certificate of each request the receiver answered. */
const received: Array<{ path: string; client: string }> = [];
let client: TestCertificate;
let other: TestCertificate;

beforeAll(async () => {
  const ca = certificates.selfSigned('ca', '/CN=Test Webhooks CA');
  const server = certificates.issue('server', ca, '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1');
  client = certificates.issue('client', ca, '/CN=webhook-sender', 'extendedKeyUsage=clientAuth');
  other = certificates.issue('other', ca, '/CN=someone-else', 'extendedKeyUsage=clientAuth');
  receiver = createServer(
    {
      key: server.key,
      cert: server.certificate,
      ca: ca.certificate,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (request, response) => {
      request.resume();
      request.on('end', () => {
        const peer = (request.socket as TLSSocket).getPeerCertificate();
        received.push({ path: request.url ?? '', client: String(peer.subject?.CN) });
        response.end('ok');
      });
    },
  );
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  stack = await startTestStack('mtls', { CALLBACK_CA_FILE: ca.file, DELIVERY_MAX_ATTEMPTS: '1' });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  certificates.remove();
});

const create = (account: string, body: object) =>
  stack.api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: stack.api.auth(account),
    payload: body,
  });
const deliveryOf = (eventId: string) =>
  waitFor('the delivery ended', async () => {
    const row = await stack.api.app.prisma.delivery.findFirst({ where: { eventId } });
    return row !== null && row.status !== 'pending' && row;
  });

describe('a client certificate', () => {
  it('is presented to a receiver that requires it; without one, the receiver refuses the connection', async () => {
    const created = await create('acct-mtls', {
      callback_url: `${receiverUrl}/with`,
      client_certificate: { certificate: client.certificate, key: client.key },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().client_certificate).toEqual({
      subject: 'CN=webhook-sender',
      issuer: 'CN=Test Webhooks CA',
      valid_to: expect.any(String),
      fingerprint_sha256: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
    });
    expect(created.body).not.toContain('PRIVATE KEY');
    const stored = await stack.api.app.prisma.subscription.findUniqueOrThrow({
      where: { id: created.json().id },
    });
    expect(stored.clientTls).toMatch(/^enc:/);
    const without = await create('acct-plain', { callback_url: `${receiverUrl}/without` });
    expect(without.json().client_certificate).toBeNull();

    const sent = await stack.publisher.publish({ accountId: 'acct-mtls', type: 'call.started', data: {} });
    expect((await deliveryOf(sent.id)).status).toBe('succeeded');
    expect(received).toEqual([{ path: '/with', client: 'webhook-sender' }]);

    const refused = await stack.publisher.publish({
      accountId: 'acct-plain',
      type: 'call.started',
      data: {},
    });
    const failed = await deliveryOf(refused.id);
    expect(failed.status).toBe('failed');
    expect(failed.lastStatusCode).toBeNull();
    expect(received).toHaveLength(1);
  });

  it.each([
    [
      'a key that is not the certificate’s',
      () => ({ certificate: client.certificate, key: other.key }),
      '/client_certificate/key',
    ],
    [
      'a certificate that does not parse',
      () => ({ certificate: 'not a certificate', key: client.key }),
      '/client_certificate/certificate',
    ],
    [
      'a key that does not parse',
      () => ({ certificate: client.certificate, key: 'not a key' }),
      '/client_certificate/key',
    ],
  ])('refuses %s, naming the field, and creates nothing', async (_what, given, pointer) => {
    const answer = await create('acct-bad-mtls', {
      callback_url: `${receiverUrl}/never`,
      client_certificate: given(),
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors).toEqual([expect.objectContaining({ pointer })]);
    expect(await stack.api.app.prisma.subscription.count({ where: { accountId: 'acct-bad-mtls' } })).toBe(0);
  });
});
