/**
 * The worker service's entry point: reads the configuration, starts the processors (and the
 * health endpoint when WORKER_HEALTH_PORT is set), and on SIGTERM or SIGINT stops taking jobs,
 * lets running deliveries finish, then disconnects (BullMQ's "going to production" guide).
 */
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { redactedConfig } from '@webhooks/shared';
import { loadWorkerConfig, workerEnvSchema } from './config.js';
import { startHealthServer } from './health-server.js';
import { startWorker } from './worker.js';

const config = loadWorkerConfig();
const log = pino({ level: config.LOG_LEVEL, name: 'worker' });
const worker = startWorker(config, log);
const health =
  config.WORKER_HEALTH_PORT > 0
    ? await startHealthServer(worker, config.HOST, config.WORKER_HEALTH_PORT, config.METRICS_TOKEN)
    : null;

closeWithGrace({ delay: config.DELIVERY_TIMEOUT_MS + 5_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an error');
  else log.info({ signal }, 'closing: finishing running deliveries');
  health?.close();
  await worker.close();
});

log.info(
  {
    config: redactedConfig(workerEnvSchema, config),
    queues: [...config.roles],
    redisMode: config.redis.mode,
    keyPrefix: config.keyPrefix,
  },
  'worker started',
);
