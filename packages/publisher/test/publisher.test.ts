import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  createEventPublisher,
  EventInputError,
  exampleCatalogueFile,
  loadCatalogue,
  type EventPublisher,
  withRedisTimeout,
} from '../src/index.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const prefix = newQueuePrefix('publisher');
let publisher: EventPublisher;
let redis: Redis;
let queue: Queue;

beforeAll(() => {
  publisher = createEventPublisher({
    redis: testRedisUrl,
    prefix,
    catalogue: loadCatalogue(exampleCatalogueFile),
  });
  redis = new Redis(testRedisUrl);
  queue = new Queue('events', { connection: redis, prefix });
});
afterAll(async () => {
  await publisher.close();
  await queue.close();
  redis.disconnect();
  await dropPrefix(prefix);
});

describe('createEventPublisher', () => {
  it('enqueues a valid event and returns its UUIDv7 id and payload timestamp', async () => {
    const event = await publisher.publish({ accountId: 'a', type: 'message.received', data: { text: 'hi' } });
    expect(event.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(event.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
    expect((await queue.getJob(event.id))?.data).toMatchObject({ accountId: 'a', type: 'message.received' });
  });

  it.each([
    [{ accountId: 'a', type: 'message.deleted', data: {} }, 400, '/type'],
    [{ accountId: '', type: 'message.sent', data: {} }, 400, '/account_id'],
    [{ accountId: 'a', type: 'message.sent', data: 'text' }, 400, '/data'],
    [{ accountId: 'a', type: 'message.sent', data: null }, 400, '/data'],
    [{ accountId: 'a', type: 'message.sent', data: { big: 'x'.repeat(256 * 1024) } }, 413, '/data'],
    [{ accountId: 'a', type: 'message.sent', data: {}, occurredAt: 'never' }, 400, '/occurred_at'],
    [{ accountId: 'a', type: 'message.sent', data: {}, idempotencyKey: '' }, 400, '/idempotency_key'],
    [{ accountId: 'a', type: 'subscription.disabled', data: {} }, 400, '/type'],
    // A test event's subscription id goes into the fan-out's SQL as a uuid: anything else would fail
    // the whole fan-out batch, other accounts' events included.
    [
      { accountId: 'a', type: 'message.sent', data: {}, subscriptionId: 'not-a-uuid' },
      400,
      '/subscription_id',
    ],
  ])('refuses %#: status %i at %s, enqueuing nothing', async (input, status, pointer) => {
    const before = await queue.count();
    const error = await publisher.publish(input as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventInputError);
    expect(error).toMatchObject({ status, pointer });
    expect(await queue.count()).toBe(before);
  });
});

describe('withRedisTimeout', () => {
  it('takes a write Redis answered while a saturated process held its event loop past the timeout', async () => {
    await redis.ping();
    const answered = withRedisTimeout(redis.ping(), 50);
    // One event-loop turn far longer than the timeout, as on an API past its capacity: Redis
    // answers meanwhile, and its answer waits in the socket while the timer expires.
    const busyUntil = Date.now() + 1_000;
    while (Date.now() < busyUntil);
    await expect(answered).resolves.toBe('PONG');
  });

  it('refuses a write Redis did not answer within the timeout', async () => {
    const never = new Promise<string>(() => {});
    await expect(withRedisTimeout(never, 50)).rejects.toThrow('Redis did not take the event within 50 ms');
  });
});
