/**
 * Overload: `POST /api/events` at a fixed rate well past what the workers deliver, through
 * autocannon (50 connections, `overallRate`), into one account's 5 subscriptions, with the
 * backlog bound (BACKLOG_MAX_DELIVERIES) at `backlogMaxDeliveries`. It reports the API's latency
 * percentiles and answers by status while overloaded, then whether every accepted event was
 * delivered and how long the drain took after the load ended.
 */
import autocannon from 'autocannon';
import { waitUntilReady } from '../scripts/lib/services.js';
import { subscribe, waitForSucceeded, withBenchStack } from './harness.js';

/** Subscriptions of the overloading account, each receiving every event. */
export const overloadSubscriptions = 5;

/** What {@link overload} measured. */
export interface OverloadResult {
  /** Events a second asked of the API. */
  rate: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers by HTTP status, as strings ('202', '503'); autocannon's errors and timeouts apart. */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Events the API accepted: stored, fanned out (at least the 202s counted). */
  accepted: number;
  delivered: number;
  /** From the end of the load to the last delivery recorded, in s. */
  drainSeconds: number;
}

/**
 * Publishes `rate` events/s for `seconds` through the API with the backlog bounded at
 * `backlogMaxDeliveries` first deliveries, and waits up to 10 minutes for the drain.
 */
export async function overload(
  rate: number,
  seconds: number,
  backlogMaxDeliveries: number,
  step: (name: string) => void,
): Promise<OverloadResult> {
  return withBenchStack(
    {
      tag: 'overload',
      env: { LOG_LEVEL: 'error', BACKLOG_MAX_DELIVERIES: String(backlogMaxDeliveries) },
    },
    async (stack, _publisher, receiver) => {
      await waitUntilReady(stack.apiUrl);
      await subscribe(stack, 'bench', `${receiver.url}/hook`, overloadSubscriptions);
      step('overload: publishing');
      const result = await autocannon({
        url: `${stack.apiUrl}/api/events`,
        method: 'POST',
        connections: 50,
        overallRate: rate,
        duration: seconds,
        headers: { authorization: `Bearer ${stack.token('bench')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } }),
      });
      const loadEnded = performance.timeOrigin + performance.now();
      const statuses: Record<string, number> = Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([status, { count }]) => [status, count ?? 0]),
      );
      step('overload: draining');
      // Requests still in flight when autocannon stopped counting may have been accepted too: the
      // events the API accepted are those stored, once every 202 counted has its deliveries.
      await waitForSucceeded(stack, (statuses['202'] ?? 0) * overloadSubscriptions, 600_000).catch(() => 0);
      const accepted = await stack.prisma.event.count();
      const finished = await waitForSucceeded(stack, accepted * overloadSubscriptions, 600_000).catch(
        () => Number.NaN,
      );
      const delivered = await stack.prisma.delivery.count({ where: { status: 'succeeded' } });
      return {
        rate,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        statuses,
        errors: result.errors,
        timeouts: result.timeouts,
        accepted,
        delivered,
        drainSeconds: (finished - loadEnded) / 1000,
      };
    },
  );
}
