/**
 * What `webhooks listen` makes of the local app's answer: its status and the start of its body, or
 * why there was none (nothing listening, no answer in time), and the line it prints.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { forward, forwardedLine, type RelayRequest } from '../src/listen.js';

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/hang') return;
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => response.writeHead(202).end(`got ${request.headers['webhook-id']} ${body}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const request: RelayRequest = {
  request_id: 'r-1',
  body: '{"type":"call.started"}',
  headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
};

describe('forwarding a relayed delivery', () => {
  it("replies with the local app's status and body, its headers and body passed as received", async () => {
    expect(await forward(`${url}/hooks`, request, 2_000)).toEqual({
      request_id: 'r-1',
      status: 202,
      error: null,
      body: 'got msg_1 {"type":"call.started"}',
    });
  });

  it('says why there is no answer: nothing listening, or none in time', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    expect(await forward(`http://127.0.0.1:${port}/`, request, 2_000)).toMatchObject({
      status: null,
      error: 'connection_refused',
    });
    expect(await forward(`${url}/hang`, request, 200)).toMatchObject({ status: null, error: 'timeout' });
  });

  it('prints the type, the webhook-id, the answer and its latency', () => {
    const at = new Date('2026-12-04T12:00:00.000Z');
    const failed = { request_id: 'r-1', status: 500, error: null, body: null };
    expect(forwardedLine(request, failed, 12.4, at)).toBe(
      '2026-12-04T12:00:00.000Z  call.started  msg_1  -> 500  12 ms',
    );
    const none = { request_id: 'r-1', status: null, error: 'timeout' as const, body: null };
    expect(forwardedLine(request, none, 200, at)).toBe(
      '2026-12-04T12:00:00.000Z  call.started  msg_1  -> no answer (timeout)  200 ms',
    );
  });
});
