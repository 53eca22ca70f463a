/**
 * The sender's `fetch`, which token requests go through: the callback rules hold for it as for an
 * attempt, against a real HTTP server on 127.0.0.1.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAttemptSender, maxFetchedBytes } from '../src/delivery/attempt.js';

let server: Server;
let port: number;
const received: string[] = [];
beforeAll(async () => {
  server = createServer((request, response) => {
    received.push(request.url ?? '');
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.url === '/huge') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('x'.repeat(maxFetchedBytes * 2));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ echoed: body, type: request.headers['content-type'] }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const senderUnder = (policy: { allowPrivate: boolean; ports: [number, number][] }) =>
  createAttemptSender({ timeoutMs: 2_000, policy: { ...policy, denyCidrs: [] }, userAgent: 'test' });
const init = {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: 'a=1',
};

describe("the sender's fetch", () => {
  it('answers as fetch does: status, headers and body', async () => {
    const sender = senderUnder({ allowPrivate: true, ports: [[1, 65535]] });
    const response = await sender.fetch(`http://127.0.0.1:${port}/token`, init);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ echoed: 'a=1', type: 'application/x-www-form-urlencoded' });
    sender.close();
  });

  it('refuses an address and a port a callback may not use, without connecting', async () => {
    const before = received.length;
    const private_ = senderUnder({ allowPrivate: false, ports: [[1, 65535]] });
    await expect(private_.fetch(`http://127.0.0.1:${port}/token`, init)).rejects.toThrow();
    const otherPorts = senderUnder({ allowPrivate: true, ports: [[1, 1]] });
    await expect(otherPorts.fetch(`http://127.0.0.1:${port}/token`, init)).rejects.toThrow(/CALLBACK_PORTS/);
    expect(received.length).toBe(before);
    private_.close();
    otherPorts.close();
  });

  it(`gives up an answer over ${maxFetchedBytes} bytes`, async () => {
    const sender = senderUnder({ allowPrivate: true, ports: [[1, 65535]] });
    await expect(sender.fetch(`http://127.0.0.1:${port}/huge`, init)).rejects.toThrow();
    sender.close();
  });
});
