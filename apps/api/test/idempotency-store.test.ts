import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { dropPrefix } from '../../../test/support/redis.js';

let kept: TestApi;
let redisOnly: TestApi;
beforeAll(async () => {
  kept = await startTestApi('idem-pg', { IDEMPOTENCY_STORE: 'postgresql' });
  redisOnly = await startTestApi('idem-redis');
});
afterAll(async () => {
  await kept.close();
  await redisOnly.close();
});

const publish = (api: TestApi, key: string, account = 'acct-idem') =>
  api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: api.auth(account),
    payload: { type: 'call.started', data: {}, idempotency_key: key },
  });

describe('IDEMPOTENCY_STORE=postgresql', () => {
  it('answers a retry with the first event even after Redis lost everything, as the queue alone cannot', async () => {
    const first = (await publish(kept, 'order-7')).json();
    expect(first.duplicate).toBe(false);
    const before = (await publish(redisOnly, 'order-7')).json();
    // A failover to a replica that had not received the writes: every key of the service is gone.
    await dropPrefix(kept.prefix);
    await dropPrefix(redisOnly.prefix);

    const retried = await publish(kept, 'order-7');
    expect(retried.statusCode).toBe(202);
    expect(retried.json()).toEqual({ id: first.id, timestamp: first.timestamp, duplicate: true });
    const lost = (await publish(redisOnly, 'order-7')).json();
    expect(lost.duplicate).toBe(false);
    expect(lost.id).not.toBe(before.id);
  });

  it('keeps keys per account', async () => {
    const mine = (await publish(kept, 'order-8', 'acct-a')).json();
    const theirs = (await publish(kept, 'order-8', 'acct-b')).json();
    expect(theirs.duplicate).toBe(false);
    expect(theirs.id).not.toBe(mine.id);
  });

  it('gives the key back when the event could not be queued, so the retry publishes', async () => {
    const strict = await startTestApi('idem-unqueued', {
      IDEMPOTENCY_STORE: 'postgresql',
      // No replica will ever acknowledge: every publish is refused, at once or after being written.
      REDIS_WAIT_REPLICAS: '1',
    });
    try {
      const refused = await publish(strict, 'order-9');
      expect(refused.statusCode).toBe(503);
      expect(await strict.app.prisma.idempotencyKey.count()).toBe(0);
    } finally {
      await strict.close();
    }
  });
});
