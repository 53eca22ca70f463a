/**
 * Fairness across accounts: account B publishes 50 events/s to 10 subscriptions through the API
 * while account A floods 300 subscriptions at 10 events/s (its default rate limit), through the
 * internal publisher so that the API's per-minute limit does not pace it. Paired in the same run
 * with B's load alone. The figures are B's publish → receipt latencies after the warm-up, and
 * where that time went (see {@link StepLatencies}); A's backlog is left to drain, and every
 * delivery of both is counted.
 */
import { percentile } from '../scripts/lib/stats.js';
import { sleep, waitFor } from '../scripts/lib/wait.js';
import { postEvent, publishAtSteadyRate, subscribe, withBenchStack, type BenchStack } from './harness.js';
import type { Progress } from './delivery-scenarios.js';

/** A step's p50 and p99, in ms. */
export interface StepPercentiles {
  p50Ms: number;
  p99Ms: number;
}

/**
 * Where account B's first deliveries spent their time, step by step, from the log's timestamps
 * and the receiver's clock (one host, one clock):
 * - `accepted`: the publish until the API took the event (its UUIDv7 id's time);
 * - `stored`: until the fan-out stored its delivery (the row's `created_at`: the events queue,
 *   and the fan-out's statement up to its start);
 * - `attempted`: until its first attempt started (the rest of the fan-out's statement, the account
 *   scheduler, the subscription's gate, the load and the host cap, or a delivery job's wait);
 * - `received`: until the receiver had it (the HTTP request).
 */
export interface StepLatencies {
  accepted: StepPercentiles;
  stored: StepPercentiles;
  attempted: StepPercentiles;
  received: StepPercentiles;
}

/** One run's figures for account B. */
export interface AccountFloodRun {
  p50Ms: number;
  p99Ms: number;
  /** B's deliveries expected and arrived. */
  expected: number;
  arrived: number;
  /** A's deliveries published and arrived (0 without the flood). */
  floodExpected: number;
  floodArrived: number;
  steps: StepLatencies;
}

export const steadySubscriptions = 10;
const floodSubscriptions = 300;
const floodRate = 10;
const warmupSeconds = 5;
/** How long to wait for every delivery of both accounts after publishing ends, in ms. */
const drainMs = 180_000;

/** The p50 and p99 of `samples` (ms). */
const percentiles = (samples: readonly number[]): StepPercentiles => ({
  p50Ms: percentile(samples, 50),
  p99Ms: percentile(samples, 99),
});

/**
 * {@link StepLatencies} of account `account`'s deliveries on `stack` whose event is in `sentAt`
 * (event id → publish time, ms since the epoch) and whose receipt is in `confirmedAt` (callback
 * path → event id → receipt time, ms since the epoch).
 */
async function stepLatencies(
  stack: BenchStack,
  account: string,
  sentAt: ReadonlyMap<string, number>,
  confirmedAt: ReadonlyMap<string, ReadonlyMap<string, number>>,
): Promise<StepLatencies> {
  const rows = await stack.prisma.$queryRaw<
    Array<{ event_id: string; callback_url: string; stored: number; attempted: number | null }>
  >`SELECT d.event_id::text, s.callback_url,
           extract(epoch FROM d.created_at)::float8 * 1000 AS stored,
           (SELECT extract(epoch FROM min(a.started_at))::float8 * 1000
            FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempted
    FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
    WHERE s.account_id = ${account}`;
  const steps = {
    accepted: [] as number[],
    stored: [] as number[],
    attempted: [] as number[],
    received: [] as number[],
  };
  for (const row of rows) {
    const sent = sentAt.get(row.event_id);
    const received = confirmedAt.get(new URL(row.callback_url).pathname)?.get(row.event_id);
    if (sent === undefined || received === undefined || row.attempted === null) continue;
    // A UUIDv7's first 48 bits are its time in ms (RFC 9562 section 5.7).
    const accepted = Number.parseInt(row.event_id.replaceAll('-', '').slice(0, 12), 16);
    steps.accepted.push(accepted - sent);
    steps.stored.push(row.stored - accepted);
    steps.attempted.push(row.attempted - row.stored);
    steps.received.push(received - row.attempted);
  }
  return {
    accepted: percentiles(steps.accepted),
    stored: percentiles(steps.stored),
    attempted: percentiles(steps.attempted),
    received: percentiles(steps.received),
  };
}

/**
 * One run: B's steady load for `seconds` after the warm-up, with A's flood over its middle
 * (`flood`) or without it. `rate` is B's events/s, each to its 10 subscriptions.
 */
export async function accountFloodRun(
  flood: boolean,
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<AccountFloodRun> {
  return withBenchStack(
    {
      tag: 'accounts',
      workers: 2,
      env: {
        WORKER_CONCURRENCY: '50',
        ACCOUNT_OVERRIDES: JSON.stringify({ flood: { max_subscriptions: floodSubscriptions } }),
      },
    },
    async (stack, publisher, receiver) => {
      const steadyPaths = Array.from({ length: steadySubscriptions }, (_, i) => `/steady-${i}`);
      for (const path of steadyPaths) await subscribe(stack, 'steady', `${receiver.url}${path}`);
      if (flood) await subscribe(stack, 'flood', `${receiver.url}/flood`, floodSubscriptions);
      const token = stack.token('steady');
      let floodEvents = 0;
      const flooding = (async () => {
        if (!flood) return;
        await sleep((warmupSeconds + 3) * 1000);
        const until = Date.now() + Math.max(1, seconds - 6) * 1000;
        for (let next = Date.now(); next < until; next += 1000 / floodRate) {
          await sleep(next - Date.now());
          await publisher.publish({ accountId: 'flood', type: 'call.completed', data: { call_id: 'f' } });
          floodEvents += 1;
        }
      })();
      const { sentAt } = await publishAtSteadyRate({
        rate,
        warmupSeconds,
        seconds,
        publish: (i) => postEvent(stack, token, i),
        onProgress: (done, total) => progress(`accounts/${flood ? 'flood' : 'alone'}`, done, total),
      });
      await flooding;

      const everyRequest =
        rate * (warmupSeconds + seconds) * steadySubscriptions + floodEvents * floodSubscriptions;
      await waitFor(
        'every delivery of both accounts',
        () => receiver.received >= everyRequest,
        drainMs,
      ).catch(() => undefined);
      const latencies: number[] = [];
      for (const path of steadyPaths)
        for (const [id, at] of receiver.confirmedAt.get(path) ?? []) {
          const sent = sentAt.get(id);
          if (sent !== undefined) latencies.push(at - sent);
        }
      const steadyRequests = steadyPaths.reduce(
        (sum, path) => sum + (receiver.confirmedAt.get(path)?.size ?? 0),
        0,
      );
      return {
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        expected: sentAt.size * steadySubscriptions,
        arrived: latencies.length,
        floodExpected: floodEvents * floodSubscriptions,
        floodArrived: receiver.received - steadyRequests,
        steps: await stepLatencies(stack, 'steady', sentAt, receiver.confirmedAt),
      };
    },
  );
}

/** Both runs, and whether B's p99 with the flood stayed within 2× of B's alone with nothing lost. */
export interface AccountFairnessResult {
  flood: AccountFloodRun;
  alone: AccountFloodRun;
  p99Ratio: number;
  met: boolean;
}

/**
 * Runs B alone, then B beside A's flood, at B's `rate` events/s (each to its 10 subscriptions) for
 * `seconds`.
 */
export async function accountFairness(
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<AccountFairnessResult> {
  const alone = await accountFloodRun(false, rate, seconds, progress);
  const flood = await accountFloodRun(true, rate, seconds, progress);
  const p99Ratio = flood.p99Ms / alone.p99Ms;
  const complete = flood.arrived === flood.expected && flood.floodArrived >= flood.floodExpected;
  return { flood, alone, p99Ratio, met: p99Ratio <= 2 && complete };
}
