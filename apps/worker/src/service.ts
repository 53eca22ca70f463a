/**
 * The worker service, as `main.ts` runs it in its heap-bounded thread: reads the configuration, starts
 * the processors (and the health endpoint with WORKER_HEALTH_PORT), and on SIGTERM or SIGINT stops
 * taking jobs, lets running deliveries finish, then disconnects (BullMQ's "going to production").
 */
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { redactedConfig, serviceLoggerOptions } from '@webhooks/shared';
import { loadWorkerConfig, workerEnvSchema } from './config.js';
import { startHealthServer } from './health-server.js';
import type { ShutdownRequest } from './main.js';
import { startWorker } from './worker.js';

const config = loadWorkerConfig();
const log = pino(serviceLoggerOptions(config, 'worker'));
const worker = startWorker(config, log);
const health =
  config.WORKER_HEALTH_PORT > 0
    ? await startHealthServer(worker, config.HOST, config.WORKER_HEALTH_PORT, config.METRICS_TOKEN)
    : null;

let requested: NodeJS.Signals | undefined;
const closing = closeWithGrace({ delay: config.DELIVERY_TIMEOUT_MS + 5_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an error');
  else log.info({ signal: signal ?? requested }, 'closing: finishing running deliveries');
  health?.close();
  await worker.close();
});
// Signals reach the launcher's thread only; it forwards them.
parentPort?.on('message', (request: ShutdownRequest) => {
  requested = request.signal;
  void closing.close();
});

log.info(
  {
    config: redactedConfig(workerEnvSchema, config),
    queues: [...config.roles],
    redisMode: config.redis.mode,
    keyPrefix: config.keyPrefix,
    heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
  },
  'worker started',
);
