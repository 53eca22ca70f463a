/**
 * Fairness across accounts: account B publishes 50 events/s to 10 subscriptions through the API
 * while account A floods 300 subscriptions at 10 events/s (its default rate limit), through the
 * internal publisher so that the API's per-minute limit does not pace it. Paired in the same run
 * with B's load alone. The figures are B's publish → receipt latencies after the warm-up; A's
 * backlog is left to drain, and every delivery of both is counted.
 */
import { percentile } from '../scripts/lib/stats.js';
import { sleep, waitFor } from '../scripts/lib/wait.js';
import { postEvent, publishAtSteadyRate, subscribe, withBenchStack } from './harness.js';
import type { Progress } from './delivery-scenarios.js';

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
}

export const steadySubscriptions = 10;
const floodSubscriptions = 300;
const floodRate = 10;
const warmupSeconds = 5;
/** How long to wait for every delivery of both accounts after publishing ends, in ms. */
const drainMs = 180_000;

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
