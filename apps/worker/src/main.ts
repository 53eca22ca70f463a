/**
 * The worker's entry point for every way of starting it (`pnpm start`, `node
 * apps/worker/dist/main.js`, the image): runs the service (`service.ts`) in a worker thread whose
 * V8 old generation is bounded to WORKER_MAX_HEAP_MB and its young generation to
 * {@link youngGenerationMb}, since a Node process cannot bound its own heap once started. SIGTERM
 * and SIGINT are forwarded to the thread, which finishes its running deliveries and exits; a second one stops at once. The process exits with
 * the thread's code, 1 when the thread failed (its heap bound reached, an invalid configuration,
 * which it reports in one line on stderr naming the variable).
 */
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
// The one module it needs, not the package: the package's graph (BullMQ, ioredis, OpenTelemetry)
// would load a second time in this thread: 70 MiB of RSS in a bare process, less in the service
// but enough to put its peak past 256 MiB.
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
