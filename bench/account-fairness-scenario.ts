/**
 * Fairness across accounts: account B publishes at a steady rate (the caller's) to 10
 * subscriptions through the API while account A floods 300 subscriptions at 10 events/s (its
 * default rate limit), through the internal publisher so that the API's per-minute limit does not
 * pace it. Paired in the same run with B's load alone, and with B beside the same 300
 * subscriptions at 1 event/s, a neighbour within capacity: that separates what the flood's excess
 * demand costs B from what any second load costs it on shared cores. The figures are B's publish
 * → receipt latencies after the warm-up, and where that time went (see {@link StepLatencies}); the
 * neighbour's backlog is left to drain, and every delivery of both is counted.
 */
import { defaultRecoverRoundsPerMinute, paceWindow } from '@webhooks/api';
import { eventAcceptedAt } from '@webhooks/worker';
import { percentile } from '../scripts/lib/stats.js';
import { sleep, waitWhileGrowing } from '../scripts/lib/wait.js';
import { postEvent, publishAtSteadyRate, subscribe, withBenchStack, type BenchStack } from './harness.js';
import { recoverAll, seedFailedDeliveries } from './recover-neighbour.js';
import type { Progress } from './delivery-scenarios.js';

/** A step's p50 and p99, in ms. */
export interface StepPercentiles {
  p50Ms: number;
  p99Ms: number;
}

/**
 * Where an account's first deliveries (account B's here, the steady account's in the API spike)
 * spent their time, step by step, from the log's timestamps and the receiver's clock (one host,
 * one clock):
 * - `accepted`: the publish until the API took the event (its UUIDv7 id's time, `eventAcceptedAt`);
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
  /** The neighbour's requests expected and arrived (0 alone): with `failing`, every attempt. */
  neighbourExpected: number;
  neighbourArrived: number;
  steps: StepLatencies;
}

export const steadySubscriptions = 10;

/**
 * A second account beside B: `subscriptions` of its own, `rate` events/s, each to all of them;
 * `failing`: its callbacks answer 500, so each delivery is attempted {@link failingAttempts} times.
 */
export interface Neighbour {
  subscriptions: number;
  rate: number;
  failing?: boolean;
  /**
   * Instead of publishing: this many failed deliveries of each subscription, stored before the
   * run and recovered through the API over its middle (`recover-neighbour.ts`, a client following
   * `continue_after` and waiting out each 429), at the default RECOVER_ROUNDS_PER_MINUTE's pace.
   */
  recover?: number;
  /** How long it publishes, in s; by default the run's middle (all but 6 s of B's `seconds`). */
  publishSeconds?: number;
}

/** DELIVERY_MAX_ATTEMPTS of a run whose neighbour fails: each of its deliveries, 4 attempts. */
export const failingAttempts = 4;

/** A flood whose callbacks fail: 100 subscriptions at 10 events/s, 4,000 attempts/s asked with the retries. */
export const failingFlood: Neighbour = { subscriptions: 100, rate: 10, failing: true };

/** The same failing subscriptions at 1 event/s: 400 attempts/s, within what the machine sends. */
export const failingWithinCapacity: Neighbour = { subscriptions: 100, rate: 1, failing: true };

/** A recover of 10,000 deliveries: 100 failed of each of 100 subscriptions, all asked for. */
export const recoverFlood: Neighbour = { subscriptions: 100, rate: 0, recover: 100 };

/** The default pace of a recovery (RECOVER_ROUNDS_PER_MINUTE's default), in deliveries a second. */
const defaultPace = paceWindow(defaultRecoverRoundsPerMinute);
export const recoveryPacePerSecond = defaultPace.rounds / defaultPace.seconds;

/**
 * The neighbour of {@link recoverFlood}'s rate: the same 10,000 deliveries to the same 100
 * subscriptions, at the recovery's default pace and for as long as the recovery lasts, but
 * published live.
 */
export const liveAtRecoveryPace: Neighbour = {
  subscriptions: 100,
  rate: recoveryPacePerSecond / 100,
  publishSeconds: (recoverFlood.subscriptions * recoverFlood.recover!) / recoveryPacePerSecond,
};

/** Account A's flood: 300 subscriptions at its default rate limit, 3,000 deliveries/s asked. */
export const flood: Neighbour = { subscriptions: 300, rate: 10 };

/** The same 300 subscriptions at 1 event/s: 300 deliveries/s, within what the machine delivers. */
export const withinCapacity: Neighbour = { subscriptions: 300, rate: 1 };

const warmupSeconds = 5;
/**
 * How long the wait for every delivery of both accounts goes on after the last one arrived, in ms:
 * a flood's backlog drains at the machine's pace (4,000 attempts/s asked of a machine that may
 * carry a tenth of it), so only a drain that stopped moving ends the wait.
 */
const stallMs = 30_000;

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
export async function stepLatencies(
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
    const accepted = eventAcceptedAt(row.event_id);
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
 * One run: B's steady load for `seconds` after the warm-up, with `neighbour` publishing over its
 * middle, or alone (null). `rate` is B's events/s, each to its 10 subscriptions.
 */
export async function accountFloodRun(
  neighbour: Neighbour | null,
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<AccountFloodRun> {
  const failing = neighbour?.failing === true;
  const recover = neighbour?.recover ?? 0;
  const label =
    neighbour === null
      ? 'alone'
      : recover > 0
        ? `${neighbour.subscriptions}x${recover} recovered`
        : `${neighbour.subscriptions}x${neighbour.rate}/s${failing ? ' failing' : ''}`;
  const subscriptions = neighbour?.subscriptions ?? 0;
  return withBenchStack(
    {
      tag: 'accounts',
      workers: 2,
      env: {
        WORKER_CONCURRENCY: '50',
        ACCOUNT_OVERRIDES: JSON.stringify({ neighbour: { max_subscriptions: subscriptions } }),
        // Retries come back within the run, and the failing subscriptions stay enabled.
        ...(failing
          ? {
              DELIVERY_MAX_ATTEMPTS: String(failingAttempts),
              DELIVERY_BACKOFF_MS: '200',
              SUBSCRIPTION_DISABLE_AFTER: '1000000',
              // The retries' turns are what this measures: the failing subscriptions' breakers must not hold them.
              BREAKER_FAILURES_IN_ROW: '1000000',
              BREAKER_MIN_ATTEMPTS: '1000000',
            }
          : {}),
      },
    },
    async (stack, publisher, receiver) => {
      if (failing) receiver.script('/neighbour', [500]);
      const steadyPaths = Array.from({ length: steadySubscriptions }, (_, i) => `/steady-${i}`);
      for (const path of steadyPaths) await subscribe(stack, 'steady', `${receiver.url}${path}`);
      const neighbourIds =
        subscriptions > 0
          ? await subscribe(stack, 'neighbour', `${receiver.url}/neighbour`, subscriptions)
          : [];
      if (recover > 0) await seedFailedDeliveries(stack, 'neighbour', neighbourIds, recover);
      const token = stack.token('steady');
      let neighbourEvents = 0;
      const publishing = (async () => {
        if (neighbour === null) return;
        await sleep((warmupSeconds + 3) * 1000);
        if (recover > 0) {
          neighbourEvents = (await recoverAll(stack, stack.token('neighbour'), neighbourIds)) / subscriptions;
          return;
        }
        const until = Date.now() + (neighbour.publishSeconds ?? Math.max(1, seconds - 6)) * 1000;
        for (let next = Date.now(); next < until; next += 1000 / neighbour.rate) {
          await sleep(next - Date.now());
          await publisher.publish({ accountId: 'neighbour', type: 'call.completed', data: { call_id: 'n' } });
          neighbourEvents += 1;
        }
      })();
      const { sentAt } = await publishAtSteadyRate({
        rate,
        warmupSeconds,
        seconds,
        publish: (i) => postEvent(stack, token, i),
        onProgress: (done, total) => progress(`accounts/${label}`, done, total),
      });
      await publishing;

      const neighbourRequests = neighbourEvents * subscriptions * (failing ? failingAttempts : 1);
      const everyRequest = rate * (warmupSeconds + seconds) * steadySubscriptions + neighbourRequests;
      await waitWhileGrowing(() => receiver.received, everyRequest, stallMs);
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
        neighbourExpected: neighbourRequests,
        neighbourArrived: receiver.received - steadyRequests,
        steps: await stepLatencies(stack, 'steady', sentAt, receiver.confirmedAt),
      };
    },
  );
}

/** Whether every delivery of B and every request of its neighbour arrived in `run`. */
const everyArrived = (run: AccountFloodRun) =>
  run.arrived === run.expected && run.neighbourArrived >= run.neighbourExpected;

/**
 * The three runs, and whether B's p99 beside the flood stayed within 2× of B's alone with nothing
 * lost; `p99OverNeighbour` sets the flood against the neighbour within capacity (reported).
 */
export interface AccountFairnessResult {
  flood: AccountFloodRun;
  alone: AccountFloodRun;
  withinCapacity: AccountFloodRun;
  p99Ratio: number;
  p99OverNeighbour: number;
  met: boolean;
}

/**
 * Runs B alone, beside the neighbour within capacity, then beside A's flood, at B's `rate`
 * events/s (each to its 10 subscriptions) for `seconds` each.
 */
export async function accountFairness(
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<AccountFairnessResult> {
  const alone = await accountFloodRun(null, rate, seconds, progress);
  const beside = await accountFloodRun(withinCapacity, rate, seconds, progress);
  const flooded = await accountFloodRun(flood, rate, seconds, progress);
  const p99Ratio = flooded.p99Ms / alone.p99Ms;
  return {
    flood: flooded,
    alone,
    withinCapacity: beside,
    p99Ratio,
    p99OverNeighbour: flooded.p99Ms / beside.p99Ms,
    met: p99Ratio <= 2 && everyArrived(flooded),
  };
}

/** A flood beside B against a neighbour of its kind within capacity, and the ratio of B's p99s. */
export interface PairedFairnessResult {
  flood: AccountFloodRun;
  withinCapacity: AccountFloodRun;
  p99Ratio: number;
  met: boolean;
}

/**
 * Runs B beside `withinCapacity`, then beside `flood`: B's p99 beside the flood stays within 2× of
 * its p99 beside the neighbour within capacity, and every request of both arrives.
 */
async function pairedFairness(
  withinCapacity: Neighbour,
  flood: Neighbour,
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<PairedFairnessResult> {
  const beside = await accountFloodRun(withinCapacity, rate, seconds, progress);
  const flooded = await accountFloodRun(flood, rate, seconds, progress);
  const p99Ratio = flooded.p99Ms / beside.p99Ms;
  return { flood: flooded, withinCapacity: beside, p99Ratio, met: p99Ratio <= 2 && everyArrived(flooded) };
}

/**
 * B beside {@link failingWithinCapacity}, then beside {@link failingFlood}, whose retries take
 * their account's turns.
 */
export const retryFairness = (rate: number, seconds: number, progress: Progress) =>
  pairedFairness(failingWithinCapacity, failingFlood, rate, seconds, progress);

/**
 * B beside {@link liveAtRecoveryPace}, then beside {@link recoverFlood}, whose recovered rounds
 * take their account's turns at the recovery's default pace: what a recovery costs B beside live
 * traffic of the same rate.
 */
export const recoverFairness = (rate: number, seconds: number, progress: Progress) =>
  pairedFairness(liveAtRecoveryPace, recoverFlood, rate, seconds, progress);
