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
import { sleep, waitFor } from '../../../test/support/wait.js';

let redis: PrivateRedisSentinel;
let stack: TestStack;

beforeAll(async () => {
  redis = await startPrivateRedisSentinel();
  stack = await startTestStack('sentinel', {
    REDIS_SENTINELS: redis.sentinels,
    REDIS_SENTINEL_NAME: redis.name,
    REDIS_WAIT_REPLICAS: '1',
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
    await stack.subscribe('acct-burst', { callback_url: `${stack.receiver.url}/burst` });
    const accepted: string[] = [];
    const refused: number[] = [];
    let publishing = true;
    const burst = (async () => {
      while (publishing) {
        const responses = await Promise.all(
          Array.from({ length: 10 }, () =>
            stack.api.app.inject({
              method: 'POST',
              url: '/api/events',
              headers: stack.api.auth('acct-burst'),
              payload: { type: 'call.started', data: {} },
            }),
          ),
        );
        for (const response of responses) {
          if (response.statusCode === 202) accepted.push(response.json().id);
          else refused.push(response.statusCode);
        }
        await sleep(10);
      }
    })();
    await waitFor('events accepted before the failover', () => accepted.length >= 50);
    const before = await redis.masterPort();
    await redis.failover();
    const acceptedAtFailover = accepted.length;
    await waitFor(
      'events accepted by the new master',
      () => accepted.length >= acceptedAtFailover + 50,
      30_000,
    );
    publishing = false;
    await burst;

    expect(await redis.masterPort()).not.toBe(before);
    expect(refused.every((status) => status === 503)).toBe(true);
    const delivered = await waitFor(
      'every accepted event delivered',
      () => {
        const ids = new Set(
          stack.receiver.at('/burst').map((request) => String(request.headers['webhook-id'])),
        );
        return accepted.every((id) => ids.has(id)) && ids;
      },
      45_000,
    );
    expect(delivered.size).toBeGreaterThanOrEqual(accepted.length);
  }, 120_000);
});
