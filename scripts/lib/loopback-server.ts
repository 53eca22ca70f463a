/** Listening on an ephemeral port of 127.0.0.1, for the local receivers of the demo and the benchmarks. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts `server` on 127.0.0.1 with a free port, keeping idle connections 60 s (the worker's
 * keep-alive sockets are reused across deliveries). Resolves with its `http://127.0.0.1:<port>` URL
 * and a `close()` that drops open connections.
 */
export async function listenOnLoopback(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
