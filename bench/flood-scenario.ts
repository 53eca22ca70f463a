/**
 * An open-loop flood far past the API's capacity: clients that do not wait for the API start
 * `rate` publishes a second for `seconds` (bench/flood-client.ts: a 5 s timeout per try, retries
 * 500 ms apart with the same idempotency key), into one subscription, on a stack with two workers.
 * The API must stay up, answer every first try 202, 429 or 503 within the timeout, and deliver
 * every event it accepted.
 */
import { Worker } from 'node:worker_threads';
import { waitUntilReady } from '../scripts/lib/services.js';
import type { FloodClientOptions, FloodClientReport } from './flood-client.js';
import { subscribe, waitForSucceeded, withBenchStack } from './harness.js';

/** Connections the flood's clients hold at most: thousands, as a crowd of clients would. */
const floodSockets = 4_000;

/** What one flood measured. */
export interface FloodRun extends FloodClientReport {
  rate: number;
  seconds: number;
  /** Accepted events whose delivery the receiver confirmed. */
  delivered: number;
  /** Whether the API answered `/healthz` after the flood. */
  apiUp: boolean;
  /** The first tries answered other than 202, 429 or 503 (timeouts and errors included). */
  unexpected: number;
  met: boolean;
}

/** Runs the clients in a thread of their own, so that the bench's loop does not pace them. */
function floodClients(options: FloodClientOptions): Promise<FloodClientReport> {
  return new Promise((resolve, reject) => {
    const thread = new Worker(new URL('./flood-client.js', import.meta.url), { workerData: options });
    thread.once('message', (report: FloodClientReport) => resolve(report));
    thread.once('error', reject);
  });
}

/** One flood at `rate` publishes/s for `seconds`. */
export async function flood(rate: number, seconds: number, step: (name: string) => void): Promise<FloodRun> {
  const unlimited = { RATE_LIMIT_PER_MINUTE: '100000000', OPEN_REQUESTS_PER_MINUTE_PER_IP: '100000000' };
  return withBenchStack(
    { tag: 'flood', workers: 2, env: { LOG_LEVEL: 'error', ...unlimited } },
    async (stack, _publisher, receiver) => {
      await waitUntilReady(stack.apiUrl);
      await subscribe(stack, 'flood', `${receiver.url}/flood`);
      step(`flood: ${rate} publishes/s`);
      const report = await floodClients({
        url: `${stack.apiUrl}/api/events`,
        token: stack.token('flood'),
        rate,
        seconds,
        sockets: floodSockets,
        giveUpMs: seconds * 1000 + 60_000,
      });
      const apiUp = (await fetch(`${stack.apiUrl}/healthz`).catch(() => null))?.ok === true;
      step('flood: draining');
      await waitForSucceeded(stack, report.accepted.length, 600_000).catch(() => undefined);
      const confirmed = receiver.confirmedAt.get('/flood') ?? new Map<string, number>();
      const delivered = report.accepted.filter((id) => confirmed.has(id)).length;
      const unexpected = Object.entries(report.firstTries)
        .filter(([outcome]) => !['202', '429', '503'].includes(outcome))
        .reduce((sum, [, count]) => sum + count, 0);
      return {
        ...report,
        rate,
        seconds,
        delivered,
        apiUp,
        unexpected,
        met: apiUp && unexpected === 0 && delivered === report.accepted.length,
      };
    },
  );
}
