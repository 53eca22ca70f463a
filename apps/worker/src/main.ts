/**
 * The worker's entry point: runs `service.ts` in a worker thread with a bounded heap (WORKER_MAX_HEAP_MB,
 * {@link youngGenerationMb}), since a process cannot bound its own. SIGTERM/SIGINT are forwarded (running
 * deliveries finish; a second signal stops at once). Exits
 * with the thread's code, 1 when it failed (heap bound, or an invalid configuration named on stderr).
 */
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
// This one module, not the package: its graph would load again in this thread (70 MiB of RSS).
import { configErrorLine } from '@webhooks/publisher/config-error';
import { heapLimitMb, youngGenerationMb } from './heap-limit.js';

/** What the launcher sends the service thread. */
export interface ShutdownRequest {
  signal: NodeJS.Signals;
}

const log = pino({ name: 'worker' });
const thread = new Worker(new URL('./service.js', import.meta.url), {
  resourceLimits: {
    maxOldGenerationSizeMb: heapLimitMb(process.env),
    maxYoungGenerationSizeMb: youngGenerationMb,
  },
});
let signalled = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (signalled) process.exit(1);
    signalled = true;
    thread.postMessage({ signal } satisfies ShutdownRequest);
  });
}
thread.on('error', (error) => {
  const line = configErrorLine('worker', error);
  if (line === null) log.fatal({ err: error }, 'worker thread failed');
  else console.error(line);
  process.exitCode = 1;
});
thread.on('exit', (code) => process.exit(process.exitCode ?? code));
