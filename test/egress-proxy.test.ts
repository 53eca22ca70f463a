/**
 * Egress through a forward proxy (DELIVERY_PROXY_URL), with a real proxy (the `proxy` package)
 * started on a free port: deliveries to http and https callbacks go through CONNECT tunnels (TLS
 * end to end with the callback, the proxy sees only the host and port); the proxy is asked for the
 * address the guard checked, never the name, which reaches the callback as `Host` and TLS SNI; and
 * the SSRF guard still refuses a callback whose address it would refuse, before the proxy is asked
 * anything.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createProxy } from 'proxy';
import { createAttemptSender, userAgent } from '@webhooks/worker';
import { testCertificates } from './support/certificates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

const certificates = testCertificates();
let proxy: HttpServer;
let proxyUrl: string;
/** What the proxy was asked, in order: `CONNECT host:port`, or `<method> <absolute URL>`. */
const asked: string[] = [];
let tlsReceiver: HttpsServer;
let tlsUrl: string;
const tlsReceived: string[] = [];
/** The `Host` header and the TLS SNI of each request the TLS receiver answered. */
const tlsHosts: Array<{ host: string; servername: string | false | null }> = [];
let stack: TestStack;

const listen = async (server: HttpServer | HttpsServer) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  proxy = createProxy(createHttpServer());
  proxy.prependListener('request', (request) => asked.push(`${request.method} ${request.url}`));
  proxy.prependListener('connect', (request) => asked.push(`CONNECT ${request.url}`));
  proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  const tls = certificates.selfSigned('tls', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
  tlsReceiver = createHttpsServer({ key: tls.key, cert: tls.certificate }, (request, response) => {
    request.resume();
    request.on('end', () => {
      tlsReceived.push(String(request.headers['webhook-id']));
      tlsHosts.push({
        host: String(request.headers.host),
        servername: (request.socket as TLSSocket).servername,
      });
      response.end('ok');
    });
  });
  tlsUrl = `https://127.0.0.1:${await listen(tlsReceiver)}`;
  stack = await startTestStack('egress-proxy', {
    DELIVERY_PROXY_URL: proxyUrl,
    CALLBACK_CA_FILE: tls.file,
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => tlsReceiver?.close(resolve));
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  certificates.remove();
});

describe('deliveries through DELIVERY_PROXY_URL', () => {
  it('reach an http and an https callback through CONNECT tunnels', async () => {
    await stack.subscribe('acct-proxy', { callback_url: `${stack.receiver.url}/via-proxy` });
    await stack.subscribe('acct-proxy', { callback_url: `${tlsUrl}/via-tunnel` });
    const { id } = await stack.publisher.publish({ accountId: 'acct-proxy', type: 'call.started', data: {} });
    await waitFor(
      'both deliveries',
      () => stack.receiver.at('/via-proxy').length === 1 && tlsReceived.length === 1,
    );
    expect(stack.receiver.at('/via-proxy')[0]!.headers['webhook-id']).toBe(id);
    expect(tlsReceived).toEqual([id]);
    expect(asked).toEqual(
      expect.arrayContaining([
        `CONNECT ${new URL(stack.receiver.url).host}`,
        `CONNECT ${new URL(tlsUrl).host}`,
      ]),
    );
  });
});

describe('a callback named by its host name, through the proxy', () => {
  it('has the proxy connect to the address the guard checked, the name kept for Host and TLS', async () => {
    const port = new URL(tlsUrl).port;
    await stack.subscribe('acct-proxy-name', { callback_url: `https://localhost:${port}/by-name` });
    const before = asked.length;
    const { id } = await stack.publisher.publish({
      accountId: 'acct-proxy-name',
      type: 'call.started',
      data: {},
    });
    await waitFor('the delivery by name', () => tlsReceived.includes(id));
    expect(tlsHosts[tlsReceived.indexOf(id)]).toEqual({ host: `localhost:${port}`, servername: 'localhost' });
    expect(asked.slice(before)).toContain(`CONNECT 127.0.0.1:${port}`);
    expect(asked.slice(before)).not.toContain(`CONNECT localhost:${port}`);
  });
});

describe('the SSRF guard through a proxy', () => {
  it('refuses a callback whose host resolves to an address it would refuse, before asking the proxy', async () => {
    const sender = createAttemptSender({
      timeoutMs: 2_000,
      policy: { allowPrivate: false, ports: [[1, 65535]], denyCidrs: [] },
      userAgent,
      proxyUrl,
    });
    try {
      const before = asked.length;
      for (const url of [
        `${stack.receiver.url}/guarded`,
        `http://localhost:${new URL(stack.receiver.url).port}/guarded`,
      ]) {
        const result = await sender.send(url, '{}', { 'content-type': 'application/json' });
        expect(result.errorClass).toBe('blocked_address');
      }
      expect(asked.length).toBe(before);
      expect(stack.receiver.at('/guarded')).toHaveLength(0);
    } finally {
      sender.close();
    }
  });
});
