/**
 * The whole service on Redis behind Sentinel: the master fails over in the middle of a
 * burst of events, and every event the API accepted (202) is still delivered. REDIS_WAIT_REPLICAS=1
 * is what makes "accepted" mean "on the replica too".
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  startPrivateRedisSentinel,
  type PrivateRedisSentinel,
} from '../../../test/support/private-redis-sentinel.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { deliveredEventIds, startPublishBurst } from '../../../test/support/publish-burst.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let redis: PrivateRedisSentinel;
let stack: TestStack;

beforeAll(async () => {
  redis = await startPrivateRedisSentinel();
  stack = await startTestStack('sentinel', {
    REDIS_SENTINELS: redis.sentinels,
    REDIS_SENTINEL_NAME: redis.name,
    REDIS_WAIT_REPLICAS: '1',
    // Publishes refused while the master has no replica online are answered at once: the burst
    // must not spend the account's rate limit on them.
    RATE_LIMIT_PER_MINUTE: '1000000',
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_TIMEOUT_MS: '1000',
    RECONCILE_INTERVAL_MS: '500',
    RECONCILE_GRACE_MS: '1000',
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await redis?.destroy();
});

describe('on Redis behind Sentinel', () => {
  it('delivers every accepted event of a burst during which the master fails over', async () => {
    // Until its replica is online, the master cannot take a publish (REDIS_WAIT_REPLICAS=1); until
    // the API reaches the master Sentinel names, it counts no request against its rate limit and
    // answers 503, a subscription's creation included.
    await waitFor('the replica online', async () => {
      const answer = await stack.api.app.inject({ method: 'GET', url: '/readyz' });
      return answer.json().status === 'ready';
    });
    await stack.subscribe('acct-burst', { callback_url: `${stack.receiver.url}/burst` });
    const burst = startPublishBurst(stack.api, Array(10).fill('acct-burst'), 10);
    const { accepted, refused } = burst;
    await waitFor('events accepted before the failover', () => accepted.length >= 50);
    const before = await redis.masterPort();
    await redis.failover();
    const acceptedAtFailover = accepted.length;
    await waitFor(
      'events accepted by the new master',
      () => accepted.length >= acceptedAtFailover + 50,
      30_000,
    );
    await burst.stop();

    expect(await redis.masterPort()).not.toBe(before);
    expect(refused.every(({ status }) => status === 503)).toBe(true);
    const delivered = await waitFor(
      'every accepted event delivered',
      () => {
        const ids = deliveredEventIds(stack.receiver.at('/burst'));
        return accepted.every((id) => ids.has(id)) && ids;
      },
      45_000,
    );
    expect(delivered.size).toBeGreaterThanOrEqual(accepted.length);
  }, 120_000);
});
