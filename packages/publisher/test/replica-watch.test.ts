/**
 * The replica watch: how a `ROLE` reply reads, when a shard refuses publishes, and against the
 * machine's Redis (a master without replicas) that a publish waiting for a replica is refused at
 * once, with nothing added, and that one waiting for none is taken.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  createEventPublisher,
  exampleCatalogueFile,
  loadCatalogue,
  PublishUnavailableError,
  refusesPublishes,
  replicasOfRole,
  watchReplicas,
} from '../src/index.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';

const redis = new Redis(testRedisUrl);
afterAll(() => redis.disconnect());

describe('replicasOfRole', () => {
  it("counts a master's replicas, and reads anything else as unknown", () => {
    expect(replicasOfRole(['master', 100, [['10.0.0.2', '6379', '100']]])).toBe(1);
    expect(replicasOfRole(['master', 100, []])).toBe(0);
    expect(replicasOfRole(['slave', '10.0.0.1', 6379, 'connected', 100])).toBeNull();
    expect(replicasOfRole(null)).toBeNull();
  });
});

describe('refusesPublishes', () => {
  it('refuses with fewer replicas than required, and not on a master that did not answer', () => {
    expect(refusesPublishes(0, 1)).toBe(true);
    expect(refusesPublishes(1, 1)).toBe(false);
    expect(refusesPublishes(0, 0)).toBe(false);
    expect(refusesPublishes(null, 1)).toBe(false);
  });
});

describe('a publisher with a replica watch', () => {
  it('refuses at once, adding nothing, a publish to a shard whose master lacks its replica', async () => {
    const prefix = newQueuePrefix('replica-watch');
    const changes: Array<[number, boolean]> = [];
    const watch = watchReplicas({
      connection: redis,
      shardKeys: [`${prefix}:events:meta`],
      required: 1,
      intervalMs: 60_000,
      onChange: ({ shard }, refusing) => changes.push([shard, refusing]),
    });
    const publisher = createEventPublisher({
      redis: testRedisUrl,
      prefix,
      catalogue: loadCatalogue(exampleCatalogueFile),
      waitReplicas: 1,
      replicaWatch: watch,
    });
    const queue = new Queue('events', { connection: redis, prefix });
    try {
      expect(await watch.sample()).toEqual([{ shard: 0, replicas: 0 }]);
      expect(changes).toEqual([[0, true]]);
      await expect(
        publisher.publish({ accountId: 'acct-a', type: 'call.started', data: { call_id: 'c' } }),
      ).rejects.toBeInstanceOf(PublishUnavailableError);
      // Without the watch, the same publish is added, then waits out WAIT's 2 s before its 503.
      expect(await queue.getJobCounts('wait')).toEqual({ wait: 0 });
    } finally {
      watch.stop();
      await publisher.close();
      await queue.close();
      await dropPrefix(prefix);
    }
  });

  it('with retries, tries again under the same event id, stores the event once, and gives up after its limit', async () => {
    const prefix = newQueuePrefix('replica-watch');
    // A shard refusing for two samples, then given its replica back.
    let asked = 0;
    const publisher = createEventPublisher({
      redis: testRedisUrl,
      prefix,
      catalogue: loadCatalogue(exampleCatalogueFile),
      waitReplicas: 1,
      replicaWatch: { refuses: () => (asked += 1) <= 2 },
      retry: { limit: 3, maxWaitMs: 10_000 },
      timeoutMs: 200,
    });
    const queue = new Queue('events', { connection: redis, prefix });
    try {
      // The machine's Redis has no replica, so the WAIT itself refuses too: the event is added, and
      // tried again under its id until the retries end; it is stored once.
      await expect(
        publisher.publish({ accountId: 'acct-a', type: 'call.started', data: { call_id: 'c' } }),
      ).rejects.toBeInstanceOf(PublishUnavailableError);
      expect(asked).toBe(4);
      expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
    } finally {
      await publisher.close();
      await queue.close();
      await dropPrefix(prefix);
    }
  });
});
