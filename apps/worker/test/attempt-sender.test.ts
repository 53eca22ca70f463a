/**
 * The worker's HTTP sender against a callback that closes kept-alive connections: a reset on a
 * reused connection is sent again, a reset on a fresh one is the attempt's result.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAttemptSender } from '../src/delivery/attempt.js';

/**
 * A callback over raw TCP: it answers 200 with keep-alive to the first request of a connection,
 * and resets the connection on its `resetAt`-th request (1: the first), as a server does that
 * closes an idle connection just as the client reuses it.
 */
async function startClosingCallback(resetAt: number) {
  const requests: number[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const connection = ++connections;
    let onThisConnection = 0;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      // One small request at a time: headers, then a body of its Content-Length.
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        onThisConnection += 1;
        requests.push(connection);
        if (onThisConnection === resetAt) {
          socket.resetAndDestroy();
          return;
        }
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
      }
    });
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** The connection number of each request received, in order. */
    requests,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

const sender = createAttemptSender({
  timeoutMs: 2_000,
  policy: { allowPrivate: true, ports: [[1, 65535]], denyCidrs: [] },
  userAgent: 'test',
});
afterAll(() => sender.close());

describe('a callback that closes a kept-alive connection as it is reused', () => {
  let callback: Awaited<ReturnType<typeof startClosingCallback>>;
  beforeAll(async () => {
    callback = await startClosingCallback(2);
  });
  afterAll(() => callback.close());

  it('gets the request again on a new connection, within the same attempt', async () => {
    const first = await sender.send(callback.url, '{}', { 'content-type': 'application/json' });
    const second = await sender.send(callback.url, '{}', { 'content-type': 'application/json' });
    expect([first.statusCode, first.errorClass]).toEqual([200, null]);
    expect([second.statusCode, second.errorClass]).toEqual([200, null]);
    // The second request reached connection 1, which reset; it was answered on connection 2.
    expect(callback.requests).toEqual([1, 1, 2]);
  });
});

describe('a callback that resets a fresh connection', () => {
  let callback: Awaited<ReturnType<typeof startClosingCallback>>;
  beforeAll(async () => {
    callback = await startClosingCallback(1);
  });
  afterAll(() => callback.close());

  it('is an attempt that met connection_reset, sent once', async () => {
    const result = await sender.send(callback.url, '{}', { 'content-type': 'application/json' });
    expect([result.statusCode, result.errorClass]).toEqual([null, 'connection_reset']);
    expect(callback.requests).toEqual([1]);
  });
});
