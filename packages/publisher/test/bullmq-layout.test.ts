/**
 * The contract of BullMQ's Redis layout that bullmq-layout.ts relies on, against a real queue of
 * the pinned BullMQ: each key's name and Redis type, which jobs each holds, and where a job's data
 * lives. An upgrade that changes any of it fails here, before it silently breaks the backlog bound,
 * the FIFO watch, the reconciler or the account scheduler.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { jobDataField, jobNameField, prioritizedScores, queueLayout } from '../src/bullmq-layout.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const redis = new Redis(testRedisUrl);
const prefix = newQueuePrefix('bullmq-layout');
const name = 'contract';
const queue = new Queue(name, { connection: { url: testRedisUrl }, prefix });
const layout = queueLayout(prefix, name);

beforeAll(() => queue.waitUntilReady());
afterAll(async () => {
  await queue.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("BullMQ's Redis layout", () => {
  it('names the keys BullMQ uses', () => {
    expect(layout).toMatchObject({
      wait: queue.keys.wait,
      prioritized: queue.keys.prioritized,
      delayed: queue.keys.delayed,
      active: queue.keys.active,
      failed: queue.keys.failed,
      meta: queue.keys.meta,
    });
    expect(layout.job('some-id')).toBe(queue.toKey('some-id'));
  });

  it('holds waiting, prioritized and delayed jobs where and as the module reads them, and their data in the job hash', async () => {
    const data = { accountId: 'acct-1', n: 1 };
    // Job ids of their own: one equal to a part's name (`delayed`) would be that key.
    await queue.add('plain', data, { jobId: 'job-plain' });
    await queue.add('prioritized', data, { jobId: 'job-prioritized', priority: 1 });
    await queue.add('delayed', data, { jobId: 'job-delayed', delay: 60_000 });
    expect(await redis.type(layout.wait)).toBe('list');
    expect(await redis.lrange(layout.wait, 0, -1)).toEqual(['job-plain']);
    expect(await redis.type(layout.prioritized)).toBe('zset');
    expect(await redis.zcard(layout.prioritized)).toBe(1);
    expect(await redis.type(layout.delayed)).toBe('zset');
    expect(await redis.zrange(layout.delayed, 0, -1)).toEqual(['job-delayed']);
    expect(JSON.parse((await redis.hget(layout.job('job-plain'), jobDataField))!)).toEqual(data);
    expect(await redis.hget(layout.job('job-plain'), jobNameField)).toBe('plain');
    expect(await redis.exists(layout.job('job-plain'))).toBe(1);
  });

  it('scores prioritized jobs by priority, so that a score range counts one priority', async () => {
    for (let i = 0; i < 3; i++) await queue.add('second', {}, { jobId: `job-priority-2-${i}`, priority: 2 });
    const [min1, max1] = prioritizedScores(1);
    const [min2, max2] = prioritizedScores(2);
    expect(await redis.zrangebyscore(layout.prioritized, min1, max1)).toEqual(['job-prioritized']);
    expect(await redis.zcount(layout.prioritized, min2, max2)).toBe(3);
  });

  it('lists a running job as active, and a failed one in the failed set', async () => {
    const seenActive: string[][] = [];
    const worker = new Worker(
      name,
      async () => {
        seenActive.push(await redis.lrange(layout.active, 0, -1));
        throw new Error('fails on purpose');
      },
      { connection: { url: testRedisUrl }, prefix },
    );
    try {
      await waitFor('the failed job', async () => (await redis.zscore(layout.failed, 'job-plain')) !== null);
    } finally {
      await worker.close();
    }
    expect(seenActive[0]).toEqual(['job-plain']);
    expect(await redis.type(layout.failed)).toBe('zset');
  });
});
