/**
 * A Redis server of a test's own, on a free port in a temporary folder, with the append-only file
 * on, for tests that shut Redis down, kill it or restart it: the machine's shared server is never
 * touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './services.js';
import { waitFor } from './wait.js';

/** A private Redis server and its controls. */
export interface PrivateRedis {
  url: string;
  /** Starts it again on the same port and folder (it reloads its append-only file). */
  start(): Promise<void>;
  /** SHUTDOWN, as an orderly stop does: the append-only file is flushed. */
  shutdown(): Promise<void>;
  /** SIGKILL: whatever the fsync policy had not written is lost. */
  kill(): Promise<void>;
  /**
   * SIGSTOP: the server keeps its connections but answers nothing, as a black-holed or overloaded
   * Redis does, until {@link PrivateRedis.resume}.
   */
  pause(): void;
  /** SIGCONT after {@link PrivateRedis.pause}: it answers what it was sent meanwhile. */
  resume(): void;
  /** Stops it for good and removes its folder. */
  destroy(): Promise<void>;
}

/** Whether a Redis server answers PING on 127.0.0.1:`port` (a sentinel too). */
export async function pingRedis(port: number): Promise<boolean> {
  const client = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * Spawns `redis-server` on 127.0.0.1:`port` with its files in `dir`, no RDB snapshots, and `args`
 * added (a sentinel is `--sentinel` with a configuration file first).
 */
export function spawnRedisServer(
  port: number,
  dir: string,
  args: string[],
  first: string[] = [],
): ChildProcess {
  return spawn(
    'redis-server',
    [...first, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...args],
    { stdio: 'ignore' },
  );
}

/**
 * Starts `redis-server` with `appendonly yes` and `appendfsync` as given (default `always`, which
 * loses no acknowledged write even to SIGKILL; `everysec` may lose about the last second).
 */
export async function startPrivateRedis(
  appendfsync: 'always' | 'everysec' = 'always',
): Promise<PrivateRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const server = spawnRedisServer(port, dir, ['--appendonly', 'yes', '--appendfsync', appendfsync]);
    child = server;
    exited = new Promise((resolve) => server.once('exit', () => resolve()));
    await waitFor('the private Redis to answer', () => pingRedis(port));
  };
  const stop = async (signal: NodeJS.Signals) => {
    child?.kill(signal);
    await exited;
    child = null;
  };
  await start();
  return {
    url,
    start,
    // redis-server answers SIGTERM with the same orderly SHUTDOWN as the command.
    shutdown: () => stop('SIGTERM'),
    kill: () => stop('SIGKILL'),
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    async destroy() {
      child?.kill('SIGCONT');
      await stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
