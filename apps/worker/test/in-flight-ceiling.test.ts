/**
 * A hot subscription earns in-flight attempts past SUBSCRIPTION_MAX_IN_FLIGHT while its callback
 * answers 200 at its pace, up to SUBSCRIPTION_IN_FLIGHT_CEILING (doubling until it is first cut
 * back, then one a window), and gives them back when the callback answers otherwise; shown on the
 * subscription and in the delivery log. A slow callback earns them one a window only.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const base = 2;
const ceiling = 6;
/** A breaker that never opened, as the subscription shows it. */
const closed = { state: 'closed', opened_at: null, retry_at: null };
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('in-flight-ceiling', {
    WORKER_CONCURRENCY: '20',
    SUBSCRIPTION_MAX_IN_FLIGHT: String(base),
    SUBSCRIPTION_IN_FLIGHT_CEILING: String(ceiling),
    DELIVERY_MAX_ATTEMPTS: '1',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    // Twenty 500s in a row cut the allowance back here; the breaker would hold them instead.
    BREAKER_FAILURES_IN_ROW: '1000',
    BREAKER_MIN_ATTEMPTS: '1000',
  });
});
afterAll(() => stack.close());

const inFlight = async (subscriptionId: string) =>
  (
    await stack.api.app.inject({
      url: `/api/webhooks/${subscriptionId}`,
      headers: stack.api.auth('acct-hot'),
    })
  ).json().delivery as { in_flight_limit: number; state: string };

/**
 * Publishes `count` events to `account` and waits until its subscription has `total` attempts.
 */
async function burst(subscriptionId: string, count: number, total: number, account = 'acct-hot') {
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      stack.publisher.publish({ accountId: account, type: 'call.completed', data: { call_id: `c-${i}` } }),
    ),
  );
  return waitFor(
    `${total} attempts`,
    async () => {
      const attempts = await stack.worker.prisma.deliveryAttempt.findMany({
        where: { delivery: { subscriptionId } },
        orderBy: { startedAt: 'asc' },
      });
      return attempts.length === total && attempts;
    },
    60_000,
  );
}

describe('a subscription whose callback answers 200 at once', () => {
  it('earns attempts in flight past the base, up to the ceiling, gives them back when it answers 500, then earns them more slowly', async () => {
    const sub = await stack.subscribe('acct-hot', { callback_url: `${stack.receiver.url}/hot` });
    expect(await inFlight(sub.id)).toEqual({ in_flight_limit: base, state: 'healthy', breaker: closed });

    const fast = await burst(sub.id, 200, 200);
    const limits = fast.map((attempt) => attempt.inFlightLimit!);
    expect(limits[0]).toBe(base);
    // Never cut back yet, it doubles a window (slow start) instead of earning one.
    expect(limits.find((limit) => limit !== base)).toBe(base * 2);
    expect(Math.max(...limits)).toBeGreaterThan(base);
    expect(Math.max(...limits)).toBeLessThanOrEqual(ceiling);
    const earned = await inFlight(sub.id);
    expect(earned.in_flight_limit).toBeGreaterThan(base);
    expect(earned.state).toBe('healthy');

    stack.receiver.script('/hot', [500]);
    const failing = await burst(sub.id, 20, 220);
    expect(failing.slice(200).every((attempt) => attempt.statusCode === 500)).toBe(true);
    // Each window of 500s halves what was earned, never below the base.
    expect(await inFlight(sub.id)).toEqual({ in_flight_limit: base, state: 'healthy', breaker: closed });

    // Cut back once, it earns one a window past where it fell to, as TCP past its ssthresh.
    stack.receiver.script('/hot', [200]);
    const again = (await burst(sub.id, 200, 420)).slice(220).map((attempt) => attempt.inFlightLimit!);
    expect(again.find((limit) => limit !== base)).toBe(base + 1);
  });
});

describe('a subscription whose callback answers 200 slowly', () => {
  it('earns attempts in flight one a window, never doubling: a slow callback must not take every worker slot within seconds', async () => {
    const sub = await stack.subscribe('acct-slow', { callback_url: `${stack.receiver.url}/slow` });
    stack.receiver.script('/slow', [{ status: 200, afterMs: 400 }]);
    const limits = (await burst(sub.id, 30, 30, 'acct-slow')).map((attempt) => attempt.inFlightLimit!);
    expect(limits[0]).toBe(base);
    expect(limits.find((limit) => limit !== base)).toBe(base + 1);
  });
});
