/**
 * An API spike: `POST /api/events` asked at 3× the API's own measured ingest capacity (measured
 * first on a stack of the same shape, shedding off), after {@link warmupSeconds} of the same load,
 * with autocannon (a worker thread, 200 connections, a 5 s client timeout) by one account into 2
 * subscriptions, while a steady
 * account publishes beside it through the typed client. Paired in the same run with the same load
 * at half the capacity, the neighbour within capacity. The API must shed, not stall: only 202, 429
 * and 503 answers, no client timeout or connection error, its p99 within 5× of its p99 at half
 * capacity, the steady account's delivery p99 within 2× of its p99 then, and every accepted event
 * delivered.
 */
import autocannon from 'autocannon';
import { createWebhookClient } from '@webhooks/client';
import { percentile } from '../scripts/lib/stats.js';
import { waitUntilReady } from '../scripts/lib/services.js';
import { stepLatencies, type StepLatencies } from './account-fairness-scenario.js';
import { requestRate, sheddingOff } from './api-scenarios.js';
import {
  publishAtSteadyRate,
  publishWith,
  subscribe,
  waitForSucceeded,
  withBenchStack,
  type BenchStack,
} from './harness.js';

/** Subscriptions of the spiking account, each receiving every event. */
const spikeSubscriptions = 2;

/**
 * Seconds of the same load before either account's figures are taken: each run starts a fresh
 * API process, whose first seconds (JIT, connection pools) are not the saturation measured.
 */
const warmupSeconds = 5;

/** The event both accounts publish. */
const event = { type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } };

/** Limits the load never reaches: the spike measures saturation, not the rate limits. */
const unlimited = { RATE_LIMIT_PER_MINUTE: '100000000', OPEN_REQUESTS_PER_MINUTE_PER_IP: '100000000' };

/** What one run measured. */
export interface SpikeRun {
  /** Events a second asked of the API by the spiking account. */
  rate: number;
  apiP50Ms: number;
  apiP99Ms: number;
  /** The spiking account's answers by HTTP status; errors and timeouts apart. */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Deliveries of accepted events expected (both accounts) and delivered. */
  expected: number;
  delivered: number;
  /** The steady account's publish → receipt latencies, ms. */
  steadyP50Ms: number;
  steadyP99Ms: number;
  steadyExpected: number;
  steadyArrived: number;
  /** The steady account's publish → 202 latencies (its client's retries included), ms. */
  steadyAcceptedP99Ms: number;
  /** Where the steady account's deliveries spent their time, step by step. */
  steadySteps: StepLatencies;
  /**
   * The steady account's tries answered other than 202 (each retried by its client), by status and
   * problem type (`503 /problems/overloaded`).
   */
  steadyRefused: Record<string, number>;
}

/**
 * The steady account's publisher: the typed client, retrying as it does by default, with every
 * try's answer counted, and the time each publish from the `from`-th on took to be accepted.
 */
function steadyPublisher(stack: BenchStack, from: number) {
  const refused: Record<string, number> = {};
  const acceptedMs: number[] = [];
  const client = createWebhookClient({
    baseUrl: stack.apiUrl,
    token: stack.token('steady'),
    fetch: async (request) => {
      const response = await globalThis.fetch(request);
      if (measuring && response.status !== 202) {
        // By problem type too: a shed over its share, a full backlog and a slow Redis are
        // different faults of the fair-shedding contract.
        const problem = (await response
          .clone()
          .json()
          .catch(() => ({}))) as { type?: string };
        const kind = `${response.status} ${problem.type ?? 'without a problem type'}`;
        refused[kind] = (refused[kind] ?? 0) + 1;
      }
      return response;
    },
  });
  let measuring = false;
  const publish = async (n: number): Promise<string> => {
    if (n >= from) measuring = true;
    const start = performance.now();
    const id = await publishWith(client, n);
    if (n >= from) acceptedMs.push(performance.now() - start);
    return id;
  };
  return { publish, refused, acceptedMs };
}

/** One run: the spiking account at `rate` events/s and the steady one at `steadyRate`, for `seconds`. */
async function spikeRun(rate: number, steadyRate: number, seconds: number, step: (name: string) => void) {
  return withBenchStack(
    { tag: 'spike', workers: 2, env: { LOG_LEVEL: 'error', ...unlimited } },
    async (stack, _publisher, receiver): Promise<SpikeRun> => {
      await waitUntilReady(stack.apiUrl);
      await subscribe(stack, 'spike', `${receiver.url}/spike`, spikeSubscriptions);
      await subscribe(stack, 'steady', `${receiver.url}/steady`);
      step(`spike: ${rate} events/s`);
      const steadyClient = steadyPublisher(stack, steadyRate * warmupSeconds);
      const spikeLoad: autocannon.Options = {
        url: `${stack.apiUrl}/api/events`,
        method: 'POST',
        connections: 200,
        // In a thread of its own: on the bench's event loop, the load would delay the steady
        // account's client and the receiver's clock, and its figures would measure the bench.
        workers: 1,
        overallRate: rate,
        duration: seconds,
        timeout: 5,
        headers: { authorization: `Bearer ${stack.token('spike')}`, 'content-type': 'application/json' },
        body: JSON.stringify(event),
      };
      const [load, steady] = await Promise.all([
        autocannon({ ...spikeLoad, duration: warmupSeconds }).then(() => autocannon(spikeLoad)),
        publishAtSteadyRate({
          rate: steadyRate,
          warmupSeconds,
          seconds,
          publish: steadyClient.publish,
        }),
      ]);
      const statuses: Record<string, number> = Object.fromEntries(
        Object.entries(load.statusCodeStats ?? {}).map(([status, { count }]) => [status, count ?? 0]),
      );
      step('spike: draining');
      // Requests autocannon stopped counting may have been accepted too, and so may the steady
      // account's publishes its client gave up on: what was stored counts.
      const expectedDeliveries = async () =>
        (await stack.prisma.event.count({ where: { accountId: 'spike' } })) * spikeSubscriptions +
        (await stack.prisma.event.count({ where: { accountId: 'steady' } }));
      // The API may still be storing requests autocannon stopped waiting for: counted again once the
      // deliveries have drained, until nothing moves.
      let expected = 0;
      for (let now = await expectedDeliveries(); now !== expected; now = await expectedDeliveries()) {
        expected = now;
        await waitForSucceeded(stack, expected, 600_000).catch(() => undefined);
      }
      const delivered = await stack.prisma.delivery.count({ where: { status: 'succeeded' } });
      const latencies = [...(receiver.confirmedAt.get('/steady') ?? [])].flatMap(([id, at]) => {
        const sent = steady.sentAt.get(id);
        return sent === undefined ? [] : [at - sent];
      });
      return {
        rate,
        apiP50Ms: load.latency.p50,
        apiP99Ms: load.latency.p99,
        statuses,
        errors: load.errors,
        timeouts: load.timeouts,
        expected,
        delivered,
        steadyP50Ms: percentile(latencies, 50),
        steadyP99Ms: percentile(latencies, 99),
        steadyExpected: steady.sentAt.size,
        steadyArrived: latencies.length,
        steadyAcceptedP99Ms: percentile(steadyClient.acceptedMs, 99),
        steadySteps: await stepLatencies(stack, 'steady', steady.sentAt, receiver.confirmedAt),
        steadyRefused: steadyClient.refused,
      };
    },
  );
}

/**
 * What the API ingests while it delivers, requests/s: a closed loop of 50 connections on a stack
 * of the runs' shape (two workers delivering what it accepts), with load shedding off, so that
 * the figure is what it processes rather than what it sheds.
 */
async function ingestCapacity(seconds: number): Promise<number> {
  return withBenchStack(
    { tag: 'spike-capacity', workers: 2, env: { LOG_LEVEL: 'error', ...unlimited, ...sheddingOff } },
    async (stack, _publisher, receiver) => {
      await waitUntilReady(stack.apiUrl);
      await subscribe(stack, 'spike', `${receiver.url}/spike`, spikeSubscriptions);
      return requestRate(`${stack.apiUrl}/api/events`, seconds, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.token('spike')}`, 'content-type': 'application/json' },
        body: JSON.stringify(event),
      });
    },
  );
}

/** The spike against half capacity, and whether the targets were met. */
export interface SpikeResult {
  /** The API's ingest capacity, requests/s (`ingestRate`, no worker). */
  capacity: number;
  half: SpikeRun;
  spike: SpikeRun;
  apiP99Ratio: number;
  steadyP99Ratio: number;
  /** Statuses other than 202, 429 and 503 in the spike. */
  unexpected: string[];
  met: boolean;
}

/**
 * Measures the API's ingest capacity, then runs half of it and 3× it, each for `seconds`, beside a
 * steady account at `steadyRate` events/s.
 */
export async function apiSpike(
  seconds: number,
  steadyRate: number,
  step: (name: string) => void,
): Promise<SpikeResult> {
  step('spike: ingest capacity');
  const capacity = await ingestCapacity(Math.min(seconds, 10));
  const half = await spikeRun(Math.round(capacity / 2), steadyRate, seconds, step);
  const spike = await spikeRun(Math.round(3 * capacity), steadyRate, seconds, step);
  const unexpected = Object.keys(spike.statuses).filter((s) => !['202', '429', '503'].includes(s));
  const apiP99Ratio = spike.apiP99Ms / half.apiP99Ms;
  const steadyP99Ratio = spike.steadyP99Ms / half.steadyP99Ms;
  return {
    capacity,
    half,
    spike,
    apiP99Ratio,
    steadyP99Ratio,
    unexpected,
    met:
      unexpected.length === 0 &&
      spike.errors + spike.timeouts === 0 &&
      apiP99Ratio <= 5 &&
      steadyP99Ratio <= 2 &&
      spike.steadyArrived === spike.steadyExpected &&
      spike.delivered >= spike.expected,
  };
}
