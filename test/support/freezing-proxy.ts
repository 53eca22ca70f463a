/**
 * A TCP proxy in front of Redis that can freeze the connections that blocked on a command
 * or were named so: their sockets stay open and silent (what either side sends is held), as a
 * half-open or wedged connection does, so a consumer waits for ever without any load; `thaw`
 * delivers what was held.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A running proxy. */
export interface FreezingProxy {
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  /** Freezes every connection that has sent `command` (case-insensitive); resolves with how many. */
  freeze(command: string): number;
  /** Lets every frozen connection go on, delivering what was held. */
  thaw(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `target` (`host:port`). */
export async function startFreezingProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<FreezingProxy> {
  const pairs = new Set<{
    client: Socket;
    server: Socket;
    sent: string;
    frozen: boolean;
    /** What each side sent while frozen, held in order. */
    held: Array<[Socket, Buffer]>;
  }>();
  const proxy: Server = createServer((client) => {
    const server = connect(targetPort, targetHost);
    const pair = { client, server, sent: '', frozen: false, held: [] as Array<[Socket, Buffer]> };
    pairs.add(pair);
    client.on('data', (chunk) => {
      if (pair.frozen) return void pair.held.push([server, chunk]);
      // The connection's first commands (its name) and its latest ones.
      const text = chunk.toString('latin1').toLowerCase();
      pair.sent =
        pair.sent.length < 1024 ? pair.sent + text : pair.sent.slice(0, 1024) + pair.sent.slice(-4096) + text;
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (pair.frozen) pair.held.push([client, chunk]);
      else client.write(chunk);
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    freeze(command) {
      let frozen = 0;
      for (const pair of pairs)
        if (!pair.frozen && pair.sent.includes(command.toLowerCase())) {
          pair.frozen = true;
          frozen += 1;
        }
      return frozen;
    },
    thaw() {
      for (const pair of pairs) {
        pair.frozen = false;
        for (const [to, chunk] of pair.held.splice(0)) to.write(chunk);
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}
