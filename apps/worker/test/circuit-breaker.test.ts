/**
 * A subscription's circuit breaker end to end: a callback that fails opens it, the account is told
 * (`subscription.failing`), its deliveries wait without spending their attempts while one probe
 * at a time finds the callback still down, and once a probe is confirmed the breaker closes
 * (`subscription.recovered`) and every waiting delivery arrives. The subscription shows the
 * breaker throughout; the account's other subscription is never held.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const maxAttempts = 10;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('circuit-breaker', {
    // One attempt in flight, so the attempts before the breaker opens are few and counted.
    SUBSCRIPTION_MAX_IN_FLIGHT: '1',
    SUBSCRIPTION_IN_FLIGHT_CEILING: '1',
    DELIVERY_MAX_ATTEMPTS: String(maxAttempts),
    // Without the breaker, six deliveries would spend dozens of attempts in the time this test waits.
    DELIVERY_BACKOFF_MS: '100',
    SUBSCRIPTION_DISABLE_AFTER: '100',
    BREAKER_FAILURES_IN_ROW: '3',
    BREAKER_COOLDOWN_MS: '1500',
    BREAKER_MAX_COOLDOWN_MS: '1500',
  });
});
afterAll(async () => {
  await stack.close();
});

async function breakerOf(account: string, subscriptionId: string) {
  const response = await stack.api.app.inject({
    method: 'GET',
    url: `/api/webhooks/${subscriptionId}`,
    headers: stack.api.auth(account),
  });
  return response.json().delivery.breaker as {
    state: string;
    opened_at: string | null;
    retry_at: string | null;
  };
}

describe('a callback that goes down and comes back', () => {
  it('opens the breaker, holds the deliveries without spending attempts, probes, and closes on a confirmed probe', async () => {
    let up = false;
    stack.receiver.script('/down', [() => (up ? 200 : 500)]);
    const sub = await stack.subscribe(
      'acct-breaker',
      { callback_url: `${stack.receiver.url}/down` },
      'calls',
    );
    // Another subscription of the same account, whose callback answers: never held by the first's breaker.
    await stack.subscribe('acct-breaker', { callback_url: `${stack.receiver.url}/up` }, 'calls');
    await stack.subscribe('acct-breaker', { callback_url: `${stack.receiver.url}/ops` }, 'operational');
    for (let i = 0; i < 6; i++)
      await stack.publisher.publish({ accountId: 'acct-breaker', type: 'call.started', data: { i } });

    const [failing] = await waitFor('subscription.failing', () => {
      const notices = stack.receiver.at('/ops');
      return notices.length > 0 && notices;
    });
    expect(JSON.parse(failing!.body)).toMatchObject({
      type: 'subscription.failing',
      data: {
        subscription_id: sub.id,
        resource_uri: `/api/webhooks/${sub.id}`,
        callback_url: `${stack.receiver.url}/down`,
        reason: 'consecutive_failures',
      },
    });
    const failedBeforeOpen = stack.receiver.at('/down').length;
    expect(failedBeforeOpen).toBeGreaterThanOrEqual(3);
    const shown = await breakerOf('acct-breaker', sub.id);
    expect(['open', 'half_open']).toContain(shown.state);
    expect(shown.retry_at).toBe(JSON.parse(failing!.body).data.retry_at);

    // Two probes find the callback still down; then it comes back.
    await waitFor('two probes', () => stack.receiver.at('/down').length >= failedBeforeOpen + 2, 30_000);
    await waitFor("the healthy subscription's six deliveries", () => stack.receiver.at('/up').length === 6);
    const beforeUp = stack.receiver.at('/down').length;
    up = true;
    const notices = await waitFor(
      'subscription.recovered',
      () => {
        const received = stack.receiver.at('/ops');
        return received.length > 1 && received;
      },
      30_000,
    );
    expect(notices.map((n) => JSON.parse(n.body).type)).toEqual([
      'subscription.failing',
      'subscription.recovered',
    ]);
    expect(JSON.parse(notices[1]!.body).data).toMatchObject({
      subscription_id: sub.id,
      failing_since: expect.any(String),
    });

    const deliveries = await waitFor(
      'every delivery confirmed',
      async () => {
        const rows = await stack.worker.prisma.delivery.findMany({ where: { subscriptionId: sub.id } });
        return rows.length === 6 && rows.every((d) => d.status === 'succeeded') && rows;
      },
      30_000,
    );
    // The failed attempts are those before the breaker opened and the probes (one more may have
    // been in flight as it opened), not the attempts six deliveries would spend retrying.
    const failed = await stack.worker.prisma.deliveryAttempt.count({
      where: { delivery: { subscriptionId: sub.id }, statusCode: 500 },
    });
    expect(failed).toBeLessThanOrEqual(failedBeforeOpen + 3);
    expect(deliveries.every((d) => d.attemptsMade < maxAttempts)).toBe(true);
    // Once it is back, each waiting delivery is sent once: six requests, six webhook-ids.
    const sinceUp = stack.receiver.at('/down').slice(beforeUp);
    expect(sinceUp).toHaveLength(6);
    expect(new Set(sinceUp.map((r) => r.headers['webhook-id'])).size).toBe(6);
    expect(await breakerOf('acct-breaker', sub.id)).toEqual({
      state: 'closed',
      opened_at: null,
      retry_at: null,
    });
  }, 90_000);
});
