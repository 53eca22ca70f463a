/**
 * The worker as its own process (the built `apps/worker/dist/main.js`, as deployed), for tests
 * that kill or signal it. `pnpm test` builds before running jest.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Path of the built worker entry point. */
export const workerMain = fileURLToPath(new URL('../../apps/worker/dist/main.js', import.meta.url));

/** A worker process; `output` collects its stdout and stderr. */
export interface WorkerProcess {
  child: ChildProcess;
  output: string[];
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/**
 * The OpenTelemetry preload the images start services with (`node --import`), built: with it and
 * OTEL_* variables asking for traces, the worker runs the real SDK and its instrumentations.
 */
export const instrumentPreload = fileURLToPath(
  new URL('../../packages/shared/dist/instrument.js', import.meta.url),
);

/** Starts a worker process with `env` added to the current environment, and `nodeArgs` before its entry. */
export function spawnWorker(env: Record<string, string>, nodeArgs: string[] = []): WorkerProcess {
  if (!existsSync(workerMain)) throw new Error(`${workerMain} is missing: run \`pnpm build\` first`);
  const child = spawn(process.execPath, [...nodeArgs, workerMain], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return { child, output, exited };
}
