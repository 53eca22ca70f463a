/**
 * Waking a waiting delivery job on the real Redis with BullMQ: a wake-up that comes while the job
 * is still running, before its step has moved it to the delayed set, is tried again a moment
 * later, so the job runs again long before its own wait ends.
 */
import { afterAll, expect, it } from '@jest/globals';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { DeliveryJobData } from '@webhooks/shared';
import { createWake } from '../src/delivery/wake.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const prefix = newQueuePrefix('wake');
const connection = new Redis(testRedisUrl, { maxRetriesPerRequest: null });
const queue = new Queue<DeliveryJobData>('deliveries', { connection, prefix });
let worker: Worker<DeliveryJobData> | undefined;

afterAll(async () => {
  await worker?.close();
  await queue.close();
  connection.disconnect();
  await dropPrefix(prefix);
});

it('wakes a job that was still running when asked, once it waits', async () => {
  const wake = createWake({ queueOf: () => queue, log: pino({ level: 'silent' }) });
  const runs: string[] = [];
  worker = new Worker<DeliveryJobData>(
    'deliveries',
    async (job: Job<DeliveryJobData>, token?: string) => {
      runs.push(job.id!);
      if (runs.length > 1) return;
      // Woken while still active (a release that frees its slot as it parks), then parked for a
      // minute: only the wake-up's second try can bring it back before then.
      await wake([job.id!]);
      await job.moveToDelayed(Date.now() + 60_000, token);
      throw new DelayedError();
    },
    { connection: connection.duplicate({ maxRetriesPerRequest: null }), prefix },
  );
  await queue.add(
    'delivery',
    { eventId: 'e', subscriptionId: 's', accountId: 'a' },
    { jobId: 'parked-while-woken' },
  );
  await waitFor('the job run again', () => runs.length === 2, 10_000);
  expect(runs).toEqual(['parked-while-woken', 'parked-while-woken']);
});
