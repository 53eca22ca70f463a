/**
 * The whole service for a test file: an API app (inject only), an in-process worker and a receiver,
 * on the file's own database and queue prefix, with helpers to subscribe and publish as a client
 * and an internal service would.
 */
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { queueNames, type EventPublisher } from '@webhooks/shared';
import { loadWorkerConfig, startWorker, type RunningWorker, type WorkerConfig } from '@webhooks/worker';
import {
  publisherFor,
  startTestApi,
  subscribeThrough,
  testEnv,
  type CreatedSubscription,
  type TestApi,
} from './api.js';
import { startReceiver, type Receiver } from '../../scripts/lib/receiver.js';
import { testRedisUrl } from './redis.js';
import { waitFor } from '../../scripts/lib/wait.js';

/** A running stack. */
export interface TestStack {
  api: TestApi;
  worker: RunningWorker;
  workerConfig: WorkerConfig;
  receiver: Receiver;
  publisher: EventPublisher;
  /** Creates a subscription through the API; returns the created resource (with `secret`). */
  subscribe(account: string, body: Record<string, unknown>, kind?: string): Promise<CreatedSubscription>;
  close(): Promise<void>;
}

/** Starts API, worker and receiver; `env` overrides both services' environment. */
export async function startTestStack(tag: string, env: Record<string, string> = {}): Promise<TestStack> {
  const allEnv = { CALLBACK_ALLOW_PRIVATE: 'true', ...env };
  const api = await startTestApi(tag, allEnv);
  const workerConfig = loadWorkerConfig(testEnv(api.database.url, api.prefix, allEnv));
  const worker = startWorker(workerConfig, pino({ level: 'silent' }));
  const receiver = await startReceiver();
  const publisher = publisherFor(api);
  return {
    api,
    worker,
    workerConfig,
    receiver,
    publisher,
    subscribe: (account, body, kind) => subscribeThrough(api, account, body, kind),
    async close() {
      await worker.close();
      await publisher.close();
      await receiver.close();
      await api.close();
    },
  };
}

/**
 * Waits for the retention run the stack's worker starts with (its hourly job scheduler fires at
 * once), so that a test running retention itself does not race it.
 */
export async function afterStartupRetention(stack: TestStack): Promise<void> {
  const maintenance = new Queue(queueNames.maintenance, {
    connection: { url: testRedisUrl },
    prefix: stack.api.prefix,
  });
  try {
    await waitFor('the retention run the worker starts with', async () =>
      (await maintenance.getJobs(['completed'])).some((job) => job.name === 'retention'),
    );
  } finally {
    await maintenance.close();
  }
}
