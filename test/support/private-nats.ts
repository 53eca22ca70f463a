/**
 * A NATS server with JetStream of a test's own (`nats-server` on a free port, its store in a
 * temporary folder), which the test may stop and start again on the same port and store; the
 * machine's shared server is never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { freePort } from '../../scripts/lib/services.js';
import { waitFor } from '../../scripts/lib/wait.js';

/** A running private server. */
export interface PrivateNats {
  /** `nats://127.0.0.1:<port>`. */
  url: string;
  /** Stops the server (SIGTERM: it writes its streams out and exits) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store, and waits until it takes connections. */
  start(): Promise<void>;
  /** Stops it and removes its store. */
  destroy(): Promise<void>;
}

/** Starts a private JetStream server. */
export async function startPrivateNats(): Promise<PrivateNats> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-nats-'));
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], {
      stdio: 'ignore',
    });
    await waitFor(
      `nats-server on ${port}`,
      async () => {
        try {
          await (await connect({ servers: url, timeout: 500 })).close();
          return true;
        } catch {
          return false;
        }
      },
      20_000,
      100,
    );
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url,
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
