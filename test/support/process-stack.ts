/**
 * The service with the worker as its own process: an API app (inject only), a receiver and a
 * publisher on the file's own database and queue prefix, and the built worker spawned on them. For
 * tests in which the worker must not share this process's event loop (a stall in it would stall
 * the test's clock too) or must run with a preload of its own (the OpenTelemetry SDK).
 */
import type { EventPublisher, EventPublisherOptions } from '@webhooks/shared';
import {
  publisherFor,
  startTestApi,
  subscribeThrough,
  testEnv,
  type CreatedSubscription,
  type TestApi,
} from './api.js';
import { waitFor } from '../../scripts/lib/wait.js';
import { spawnWorker, type WorkerProcess } from './worker-process.js';
import { startReceiver, type Receiver } from '../../scripts/lib/receiver.js';

/** A running stack with its worker process. */
export interface ProcessStack {
  api: TestApi;
  receiver: Receiver;
  publisher: EventPublisher;
  worker: WorkerProcess;
  /** Creates a subscription of `account` through the API; throws unless it answers 201. */
  subscribe(account: string, body: Record<string, unknown>): Promise<CreatedSubscription>;
  /** Resolves once the worker process has logged that it started (within 30 s). */
  started(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the stack; `env` is added to the worker's environment (LOG_LEVEL `info` unless given, so
 * that its start can be seen), `nodeArgs` go before its entry, `telemetry` to the publisher.
 */
export async function startProcessStack(
  tag: string,
  options: {
    env?: Record<string, string>;
    nodeArgs?: string[];
    telemetry?: EventPublisherOptions['telemetry'];
  } = {},
): Promise<ProcessStack> {
  const api = await startTestApi(tag, { CALLBACK_ALLOW_PRIVATE: 'true' });
  const receiver = await startReceiver();
  const publisher = publisherFor(api, options.telemetry);
  const worker = spawnWorker(
    testEnv(api.database.url, api.prefix, {
      CALLBACK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
      ...options.env,
    }),
    options.nodeArgs,
  );
  return {
    api,
    receiver,
    publisher,
    worker,
    subscribe: (account, body) => subscribeThrough(api, account, body),
    async started() {
      await waitFor('the worker to start', () => worker.output.join('').includes('worker started'), 30_000);
    },
    async close() {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await publisher.close();
      await receiver.close();
      await api.close();
    },
  };
}
