/**
 * The FIFO watch on real Redis: a FIFO head waits for an earlier event of its own account still in
 * its fan-out, and only of its own account. Whose a queued event is comes from its job's name,
 * which the shared publisher gives every fan-out job.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { v7 as uuidv7 } from 'uuid';
import {
  createEventPublisher,
  eventJob,
  eventJobName,
  exampleCatalogueFile,
  loadCatalogue,
  queueNames,
  type EventJobData,
} from '@webhooks/shared';
import { createFanOutWatch } from '../src/delivery/fifo.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const event = (accountId: string, id = uuidv7()): EventJobData => ({
  id,
  accountId,
  type: 'call.completed',
  data: {},
  timestamp: new Date().toISOString().replace('Z', ''),
});

describe('the FIFO watch', () => {
  const prefix = newQueuePrefix('fan-out-watch');
  let redis: Redis;
  let events: Queue<EventJobData>;
  let watch: ReturnType<typeof createFanOutWatch>;

  beforeAll(() => {
    redis = new Redis(testRedisUrl);
    events = new Queue<EventJobData>(queueNames.events, { connection: redis, prefix });
    watch = createFanOutWatch(redis, () => events);
  });
  afterAll(async () => {
    await events.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  it("holds a head behind its own account's earlier event, not behind another account's", async () => {
    const othersEarlier = event('watch-other');
    const ownEarlier = event('watch-own');
    const head = uuidv7();
    await events.addBulk([eventJob(othersEarlier)]);
    expect(await watch('watch-own', head)).toBe(false);
    await events.addBulk([eventJob(ownEarlier)]);
    expect(await watch('watch-own', head)).toBe(true);
    expect(await watch('watch-own', ownEarlier.id)).toBe(false);
    expect(await watch('watch-other', head)).toBe(true);
  });

  it("names the shared publisher's jobs for their account", async () => {
    const publishPrefix = newQueuePrefix('fan-out-watch-publisher');
    const publisher = createEventPublisher({
      redis: testRedisUrl,
      prefix: publishPrefix,
      catalogue: loadCatalogue(exampleCatalogueFile),
    });
    try {
      const { id } = await publisher.publish({
        accountId: 'watch-publisher',
        type: 'call.completed',
        data: {},
      });
      const queue = new Queue(queueNames.events, { connection: redis, prefix: publishPrefix });
      try {
        expect((await queue.getJob(id))?.name).toBe(eventJobName('watch-publisher'));
        expect(eventJobName('watch-publisher')).not.toBe(eventJobName('watch-other'));
      } finally {
        await queue.close();
      }
    } finally {
      await publisher.close();
      await dropPrefix(publishPrefix);
    }
  });
});
