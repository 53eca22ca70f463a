/**
 * The fairness benchmark: two worker processes at their defaults (WORKER_CONCURRENCY
 * 50, DELIVERY_TIMEOUT_MS 10000), 10 subscriptions receiving `call.completed`, 50 events/s
 * ({@link fairnessRate}: fewer on a machine of less capacity) through `POST /api/events`; the
 * receiver answers 200 at once, except on one subscription's path, which is faulty in one of
 * three ways. Each faulty run is paired with the same load where that
 * path answers 200 too, in the same `pnpm bench` run. The figures are the nine healthy
 * subscriptions' publish → receipt latencies and when their last delivery arrived; the first
 * eight seconds of publishing warm the stack up and are not measured.
 */
import { percentile } from '../scripts/lib/stats.js';
import { postEvent, publishAtSteadyRate, subscribe, withBenchStack, type BareAnswer } from './harness.js';
import type { Progress } from './delivery-scenarios.js';
import { waitFor } from '../scripts/lib/wait.js';

/**
 * The faults: a hanging callback, one failing at once, a hanging one of another account, and that
 * one again with retries back within the run (DELIVERY_BACKOFF_MS 1000, DELIVERY_MAX_ATTEMPTS 5),
 * so that the breaker sees them: with the default backoff (60 s) it sees first attempts only.
 */
export type FairnessVariant = 'hang' | 'fail' | 'hang-other-account' | 'hang-other-account-retried';

/** Every variant, in the order a run takes them. */
export const fairnessVariants: readonly FairnessVariant[] = [
  'hang',
  'fail',
  'hang-other-account',
  'hang-other-account-retried',
];

/** One run's figures for the healthy subscriptions. */
export interface FairnessRun {
  p50Ms: number;
  p99Ms: number;
  /** Healthy deliveries expected and arrived. */
  expected: number;
  arrived: number;
  /** From the last publish to the last healthy arrival, in ms. */
  lastArrivalAfterEndMs: number;
}

const healthyCount = 9;

/** Subscriptions of a fairness run: the healthy ones and the faulty one. */
export const fairnessSubscriptions = healthyCount + 1;

/**
 * Events/s of a fairness run: 50 (500 deliveries/s, as the fairness issue measured it), or half
 * the run's end-to-end capacity (deliveries/s) when that is less. At capacity the run without the
 * fault queues as much as the run with it, and their ratio measures the queue: on a machine whose
 * end-to-end capacity was 485-578 deliveries/s, both runs' p50 reached 2 s.
 */
export function fairnessRate(capacity: number): number {
  return Math.max(1, Math.min(50, Math.round((0.5 * capacity) / fairnessSubscriptions)));
}

/** Seconds published before the measured ones, while the workers start, pools connect and code warms up (about 5 s on a 2-core machine). */
const warmupSeconds = 8;
/** How long to wait for stragglers after publishing ends, in ms (the table: 120 s). */
const drainMs = 120_000;

/**
 * Runs one variant, with the fault (`faulty`) or as its pair without it.
 *
 * @param rate events per second to the healthy subscriptions' account
 */
export async function fairnessRun(
  variant: FairnessVariant,
  faulty: boolean,
  rate: number,
  seconds: number,
  progress: Progress,
): Promise<FairnessRun> {
  const fault: BareAnswer = !faulty ? 200 : variant === 'fail' ? 500 : 'hang';
  const name = `${variant}${faulty ? '' : '/pair'}`;
  return withBenchStack(
    {
      tag: 'fairness',
      workers: 2,
      env: {
        WORKER_CONCURRENCY: '50',
        DELIVERY_TIMEOUT_MS: '10000',
        ...(variant === 'hang-other-account-retried'
          ? { DELIVERY_BACKOFF_MS: '1000', DELIVERY_MAX_ATTEMPTS: '5' }
          : {}),
      },
      answer: (path) => (path === '/faulty' ? fault : 200),
    },
    async (stack, _publisher, receiver) => {
      const otherAccount = variant.startsWith('hang-other-account');
      const paths = Array.from({ length: healthyCount }, (_, i) => `/healthy-${i}`);
      for (const path of paths) await subscribe(stack, 'tenant-a', `${receiver.url}${path}`);
      await subscribe(stack, otherAccount ? 'tenant-b' : 'tenant-a', `${receiver.url}/faulty`);
      const tokenA = stack.token('tenant-a');
      const tokenB = stack.token('tenant-b');

      const { sentAt, end } = await publishAtSteadyRate({
        rate,
        warmupSeconds,
        seconds,
        publish: async (i) => {
          // The other account gets the same events, so both runs carry ten deliveries per event.
          const [id] = await Promise.all([
            postEvent(stack, tokenA, i),
            otherAccount ? postEvent(stack, tokenB, i) : null,
          ]);
          return id;
        },
        onProgress: (done, total) => progress(`fair/${name}`, done, total),
      });

      const expected = sentAt.size * healthyCount;
      const arrivedCount = () =>
        paths.reduce(
          (sum, path) =>
            sum + [...(receiver.confirmedAt.get(path)?.keys() ?? [])].filter((id) => sentAt.has(id)).length,
          0,
        );
      // Not drained in time: the latencies count what never arrived as such.
      await waitFor('every delivery arrived', () => arrivedCount() >= expected, drainMs, 100).catch(
        () => undefined,
      );

      const latencies: number[] = [];
      let lastArrival = end;
      for (const path of paths) {
        for (const [id, at] of receiver.confirmedAt.get(path) ?? []) {
          const sent = sentAt.get(id);
          if (sent === undefined) continue;
          latencies.push(at - sent);
          lastArrival = Math.max(lastArrival, at);
        }
      }
      return {
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        expected,
        arrived: latencies.length,
        lastArrivalAfterEndMs: lastArrival - end,
      };
    },
  );
}

/** A variant with its pair, and whether it met its target. */
export interface FairnessResult {
  variant: FairnessVariant;
  faulty: FairnessRun;
  pair: FairnessRun;
  /** Faulty p99 over paired p99. */
  p99Ratio: number;
  /** p99 at most 2× the pair's and every healthy delivery arrived within 5 s of publishing's end. */
  met: boolean;
}

/** Runs `variants` (all by default), each with its pair. */
export async function fairness(
  rate: number,
  seconds: number,
  progress: Progress,
  variants: readonly FairnessVariant[] = fairnessVariants,
): Promise<FairnessResult[]> {
  const results: FairnessResult[] = [];
  for (const variant of variants) {
    const pair = await fairnessRun(variant, false, rate, seconds, progress);
    const faulty = await fairnessRun(variant, true, rate, seconds, progress);
    const p99Ratio = faulty.p99Ms / pair.p99Ms;
    results.push({
      variant,
      faulty,
      pair,
      p99Ratio,
      met: p99Ratio <= 2 && faulty.arrived === faulty.expected && faulty.lastArrivalAfterEndMs <= 5_000,
    });
  }
  return results;
}
