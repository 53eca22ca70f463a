/**
 * A Redis that comes back empty (a failover to a replica that had not synced, a restart without
 * persistence, `FLUSHALL`), through the real API, an in-process worker, PostgreSQL, a Redis of the
 * test's own and an HTTP receiver: deliveries waiting for their retry when Redis is wiped are all
 * delivered, without restarting the worker, because it sets the maintenance schedules again and
 * the reconciler rebuilds their jobs from PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../../../scripts/lib/private-redis.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let redis: PrivateRedis;
let stack: TestStack;
beforeAll(async () => {
  redis = await startPrivateRedis('everysec');
  stack = await startTestStack('redis-wiped', {
    REDIS_URL: redis.url,
    RECONCILE_INTERVAL_MS: '1000',
    RECONCILE_GRACE_MS: '1000',
    // Retries far enough apart that every one is waiting in Redis when it is wiped.
    DELIVERY_BACKOFF_MS: '3000',
    DELIVERY_MAX_ATTEMPTS: '6',
    SUBSCRIPTION_DISABLE_AFTER: '1000',
    // Every first attempt must fail and wait as a retry; the breaker would hold half of them.
    BREAKER_FAILURES_IN_ROW: '1000',
    BREAKER_MIN_ATTEMPTS: '1000',
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await redis?.shutdown();
}, 60_000);

describe('a Redis wiped while retries wait in it', () => {
  it('delivers every stored delivery without a restart', async () => {
    const events = 20;
    const path = '/wiped';
    // Every attempt fails until Redis has been wiped; only then does the callback answer 200.
    stack.receiver.script(path, [500]);
    const subscription = await stack.subscribe('acct-wiped', {
      callback_url: `${stack.receiver.url}${path}`,
    });
    const ids: string[] = [];
    for (let i = 0; i < events; i++)
      ids.push(
        (await stack.publisher.publish({ accountId: 'acct-wiped', type: 'call.completed', data: { i } })).id,
      );
    const deliveries = () =>
      stack.worker.prisma.delivery.findMany({ where: { subscriptionId: subscription.id } });
    await waitFor(
      'every first attempt failed, its retry waiting',
      async () => {
        const rows = await deliveries();
        return rows.length === events && rows.every((d) => d.status === 'pending' && d.attemptsMade >= 1);
      },
      60_000,
    );

    const client = new Redis(redis.url);
    try {
      await client.flushall();
    } finally {
      client.disconnect();
    }
    stack.receiver.script(path, [200]);
    const beforeWipe = stack.receiver.at(path).length;

    await waitFor(
      'every delivery confirmed after the wipe',
      async () => (await deliveries()).every((d) => d.status === 'succeeded'),
      60_000,
    );
    // Only requests after the wipe were answered 200: each event's delivery was among them.
    const confirmed = new Set(
      stack.receiver
        .at(path)
        .slice(beforeWipe)
        .map((request) => String(request.headers['webhook-id'])),
    );
    expect([...confirmed].sort()).toEqual([...ids].sort());
  }, 90_000);
});
