/**
 * Starting the built API and worker as child processes for the demo and the benchmarks, exactly as
 * they are deployed (`node apps/api/dist/server.js`, `node apps/worker/dist/main.js`), and
 * waiting until the API is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { repositoryRoot } from './repository-root.js';
import { waitFor } from './wait.js';

const root = repositoryRoot();

/** A running service process. */
export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** Sends SIGTERM and resolves when the process has exited (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** The OpenTelemetry SDK's preload (packages/shared/src/instrument.ts), relative to the root. */
export const instrumentEntry = './packages/shared/dist/instrument.js';

/** Entry points of the built services, relative to the repository root. */
export const entries = {
  api: 'apps/api/dist/server.js',
  worker: 'apps/worker/dist/main.js',
  baseline: 'dist/bench/baseline-server.js',
} as const;

/**
 * Starts the built service `name` with `env` added to this process's environment and `nodeArgs`
 * before the entry (e.g. `--cpu-prof`). Its output is passed through when `verbose`, kept quiet
 * otherwise (errors still reach stderr).
 */
export function startService(
  name: keyof typeof entries,
  env: Record<string, string>,
  options: { verbose?: boolean; nodeArgs?: string[] | undefined } = {},
): ServiceProcess {
  const entry = entries[name];
  // As the images start them: the OpenTelemetry SDK first, inert unless OTEL_* variables ask.
  const preload = name === 'baseline' ? [] : ['--import', instrumentEntry];
  const child = spawn(process.execPath, [...preload, ...(options.nodeArgs ?? []), entry], {
    cwd: root,
    // The demo and the benchmarks run with throw-away secrets: development rules, unless told otherwise.
    env: { NODE_ENV: 'development', ...process.env, ...env },
    stdio: ['ignore', options.verbose ? 'inherit' : 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    child,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `<apiUrl>/readyz` until it answers 200.
 *
 * @throws Error after `timeoutMs` (default 30 s)
 */
export async function waitUntilReady(apiUrl: string, timeoutMs = 30_000): Promise<void> {
  // A refused connection is an API not listening yet.
  const ready = async () => (await fetch(`${apiUrl}/readyz`).catch(() => null))?.ok;
  await waitFor(`the API at ${apiUrl} to be ready`, ready, timeoutMs, 100);
}
