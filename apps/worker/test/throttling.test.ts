/**
 * Fairness between subscriptions end to end: the adaptive in-flight limit of a subscription whose attempts time out,
 * and `rate_limit` held by two worker processes together.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { v7 as uuidv7 } from 'uuid';
import { testEnv } from '../../../test/support/api.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';
import { spawnWorker, type WorkerProcess } from '../../../test/support/worker-process.js';

const env = {
  WORKER_CONCURRENCY: '10',
  SUBSCRIPTION_MAX_IN_FLIGHT: '4',
  // Throttling below the base is what this file shows; earning above it is in-flight-ceiling.test.ts.
  SUBSCRIPTION_IN_FLIGHT_CEILING: '4',
  // Long enough that a loaded CI machine does not time out the receiver's immediate answers (the
  // rate_limit case would lose its one attempt), short enough for the hanging case to stay quick.
  DELIVERY_TIMEOUT_MS: '1000',
  DELIVERY_MAX_ATTEMPTS: '1',
  SUBSCRIPTION_DISABLE_AFTER: '100',
};
/** A breaker that never opened, as the subscription shows it. */
const closed = { state: 'closed', opened_at: null, retry_at: null };
let stack: TestStack;
let second: WorkerProcess;

beforeAll(async () => {
  stack = await startTestStack('throttling', env);
  second = spawnWorker(
    testEnv(stack.api.database.url, stack.api.prefix, { CALLBACK_ALLOW_PRIVATE: 'true', ...env }),
  );
});
afterAll(async () => {
  second.child.kill('SIGTERM');
  await second.exited;
  await stack.close();
});

const publishTo = (accountId: string) =>
  stack.publisher.publish({ accountId, type: 'call.completed', data: { call_id: uuidv7() } });

const attemptsOf = (subscriptionId: string) =>
  stack.worker.prisma.deliveryAttempt.findMany({
    where: { delivery: { subscriptionId } },
    orderBy: { startedAt: 'asc' },
  });

async function pacing(account: string, subscriptionId: string) {
  const response = await stack.api.app.inject({
    method: 'GET',
    url: `/api/webhooks/${subscriptionId}`,
    headers: stack.api.auth(account),
  });
  return response.json().delivery as { in_flight_limit: number; state: string };
}

describe('a subscription whose attempts time out', () => {
  it('is throttled down to one attempt in flight, shown on the subscription and in the delivery log, and climbs back with successes', async () => {
    stack.receiver.script('/slow', ['hang']);
    const sub = await stack.subscribe('acct-slow', { callback_url: `${stack.receiver.url}/slow` });
    expect(await pacing('acct-slow', sub.id)).toEqual({
      in_flight_limit: 4,
      state: 'healthy',
      breaker: closed,
    });

    for (let i = 0; i < 8; i++) await publishTo('acct-slow');
    const timedOut = await waitFor('eight timed-out attempts', async () => {
      const rows = await attemptsOf(sub.id);
      return rows.length === 8 && rows;
    });
    expect(timedOut.every((a) => a.errorClass === 'timeout')).toBe(true);
    const limits = timedOut.map((a) => a.inFlightLimit!);
    expect(limits[0]).toBe(4);
    expect(limits.at(-1)).toBe(1);
    expect([...limits].sort((a, b) => b - a)).toEqual(limits);
    expect(await pacing('acct-slow', sub.id)).toEqual({
      in_flight_limit: 1,
      state: 'throttled',
      breaker: closed,
    });

    expect(stack.receiver.at('/slow')).toHaveLength(8);

    const log = await stack.api.app.inject({
      method: 'GET',
      url: `/api/webhooks/${sub.id}/deliveries/${timedOut.at(-1)!.deliveryId}`,
      headers: stack.api.auth('acct-slow'),
    });
    expect(log.json().attempts[0].in_flight_limit).toBe(1);

    stack.receiver.script('/slow', [200]);
    await waitFor(
      'the subscription healthy again',
      async () => {
        await publishTo('acct-slow');
        return (await pacing('acct-slow', sub.id)).state === 'healthy';
      },
      30_000,
    );
    expect(await pacing('acct-slow', sub.id)).toEqual({
      in_flight_limit: 4,
      state: 'healthy',
      breaker: closed,
    });
  });
});

describe('rate_limit', () => {
  it('of 2 is never exceeded in any one-second window by two worker processes, and costs no attempts', async () => {
    const sub = await stack.subscribe('acct-rate', {
      callback_url: `${stack.receiver.url}/rate`,
      rate_limit: 2,
    });
    expect(sub.rate_limit).toBe(2);
    for (let i = 0; i < 10; i++) await publishTo('acct-rate');
    await waitFor('ten deliveries', () => stack.receiver.at('/rate').length === 10, 30_000);

    const deliveries = await waitFor('ten deliveries recorded', async () => {
      const rows = await stack.worker.prisma.delivery.findMany({
        where: { subscriptionId: sub.id },
        include: { attempts: true },
      });
      return rows.every((d) => d.status === 'succeeded') && rows;
    });
    expect(deliveries.map((d) => [d.status, d.attemptsMade])).toEqual(Array(10).fill(['succeeded', 1]));
    // When each attempt was sent, as the worker recorded it: the pace the service controls. Arrival
    // times at the receiver add transport delays, which a loaded CI machine stretches past any guard.
    const sent = deliveries.flatMap((d) => d.attempts.map((a) => a.startedAt.getTime()));
    for (const start of sent) {
      expect(sent.filter((at) => at >= start && at < start + 1000).length).toBeLessThanOrEqual(2);
    }
  });

  it('is refused below 1 with a problem naming the field, and can be lifted with null', async () => {
    const refused = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth('acct-rate-edit'),
      payload: { callback_url: `${stack.receiver.url}/x`, rate_limit: 0 },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors[0].pointer).toBe('/rate_limit');

    const sub = await stack.subscribe('acct-rate-edit', {
      callback_url: `${stack.receiver.url}/x`,
      rate_limit: 5,
    });
    const lifted = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${sub.id}`,
      headers: stack.api.auth('acct-rate-edit'),
      payload: { rate_limit: null },
    });
    expect(lifted.json().rate_limit).toBeNull();
  });
});
