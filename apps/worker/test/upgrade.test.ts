/**
 * A rolling upgrade: a worker of this version starts on what the previous release (0.1.0) left in
 * Redis, written here field for field as that release wrote it, not through this version's code:
 * a fan-out job not yet run, a first delivery waiting in its account's scheduler list, a retry in
 * BullMQ's delayed set, a delivery parked behind its subscription's gate, and a round claimed by a
 * worker of that release that died mid-attempt. Each is delivered, once, and the claimed one only
 * after the dead worker's claim has ended.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { loadWorkerConfig, startWorker, type RunningWorker } from '@webhooks/worker';
import { startTestApi, subscribeThrough, testEnv, type TestApi } from '../../../test/support/api.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const account = 'acct-upgrade';
let api: TestApi;
let receiver: Receiver;
let worker: RunningWorker | undefined;
const redis = new Redis(testRedisUrl);

beforeAll(async () => {
  api = await startTestApi('upgrade', { CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
});

afterAll(async () => {
  await worker?.close();
  await receiver.close();
  await api.close();
  redis.disconnect();
});

/** Event rows with a pending first-round delivery each to `subscriptionId`, as 0.1.0's fan-out stored them. */
async function storePending(subscriptionId: string, attemptsMade: number, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => uuidv7());
  await api.app.prisma.event.createMany({
    data: ids.map((id) => ({
      id,
      accountId: account,
      type: 'call.completed',
      data: { n: id },
      occurredAt: new Date(),
    })),
  });
  await api.app.prisma.$executeRaw`
    INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, updated_at)
    SELECT delivery_id(e, ${subscriptionId}::uuid), e, ${subscriptionId}::uuid, 'pending', ${attemptsMade}, now()
    FROM unnest(${ids}::uuid[]) AS e`;
  return ids;
}

describe('a worker of this version on what the previous release left in Redis', () => {
  it('delivers each of its fan-outs, scheduled, delayed, parked and claimed deliveries once', async () => {
    const sub = await subscribeThrough(api, account, { callback_url: `${receiver.url}/upgrade` });
    const prefix = api.config.shards.subscriptionPrefix(sub.id);
    const jobId = (eventId: string) => `${eventId}.${sub.id}`;
    const events = new Queue('events', { connection: { url: testRedisUrl }, prefix });
    const deliveries = new Queue('deliveries', { connection: { url: testRedisUrl }, prefix });

    // A fan-out job, as 0.1.0's publisher queued it.
    const fannedOut = uuidv7();
    await events.add(
      `event:${createHash('sha256').update(account).digest('hex').slice(0, 16)}`,
      {
        id: fannedOut,
        accountId: account,
        type: 'call.completed',
        data: { call_id: 'c-1' },
        timestamp: new Date().toISOString().replace(/Z$/, ''),
        requestId: 'req-upgrade',
      },
      {
        jobId: fannedOut,
        attempts: 10,
        backoff: { type: 'exponential', delay: 1000 },
        removeOnComplete: { age: 3600, count: 1000 },
        removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
      },
    );

    // A first delivery waiting for its account's turn in the scheduler's list.
    const [scheduled] = await storePending(sub.id, 0, 1);
    await redis
      .multi()
      .hset(`${prefix}:sched:entries`, jobId(scheduled!), `${account}\treq-upgrade`)
      .rpush(`${prefix}:sched:q:${account}`, jobId(scheduled!))
      .rpush(`${prefix}:sched:ring`, account)
      .exec();

    // A retry after a failed inline attempt, due in a moment.
    const [retried] = await storePending(sub.id, 1, 1);
    const retryOptions = {
      attempts: 4,
      backoff: { type: 'delivery' },
      removeOnComplete: true,
      removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
    };
    await deliveries.add(
      'deliver',
      { eventId: retried, subscriptionId: sub.id, round: 0, accountId: account, inlineAttempts: 1 },
      { ...retryOptions, jobId: jobId(retried!), delay: 500 },
    );

    // Parked behind the gate for its longest wait: only a released slot brings it back soon.
    const [parked] = await storePending(sub.id, 0, 1);
    await deliveries.add(
      'deliver',
      { eventId: parked, subscriptionId: sub.id, round: 0, accountId: account },
      { ...retryOptions, attempts: 5, jobId: jobId(parked!), delay: 3_600_000 },
    );
    await redis.zadd(`${prefix}:gate:{${sub.id}}:parked`, Date.now(), jobId(parked!));
    await redis.pexpire(`${prefix}:gate:{${sub.id}}:parked`, 120_000);

    // Claimed by a 0.1.0 worker that died mid-attempt: its claim holds the round until it ends.
    const [claimed] = await storePending(sub.id, 0, 1);
    await redis.set(`${prefix}:claim:${jobId(claimed!)}`, '1', 'PX', 2_000);
    const claimEndsAt = Date.now() + (await redis.pttl(`${prefix}:claim:${jobId(claimed!)}`));
    await deliveries.add(
      'deliver',
      { eventId: claimed, subscriptionId: sub.id, round: 0, accountId: account },
      { ...retryOptions, attempts: 5, jobId: jobId(claimed!) },
    );
    await Promise.all([events.close(), deliveries.close()]);

    worker = startWorker(
      loadWorkerConfig(testEnv(api.database.url, api.prefix, { CALLBACK_ALLOW_PRIVATE: 'true' })),
      pino({ level: 'silent' }),
    );
    const all = [fannedOut, scheduled!, retried!, parked!, claimed!];
    await waitFor('every delivery the previous release left', async () =>
      all.every((id) => receiver.confirmed.has(id)),
    );
    // Sent once each: nothing of the old state sent anything twice.
    const sent = receiver.at('/upgrade').map((request) => request.headers['webhook-id']);
    expect(sent.sort()).toEqual([...all].sort());
    expect(receiver.confirmed.get(claimed!)).toBeGreaterThanOrEqual(claimEndsAt);
    await waitFor('every delivery recorded as succeeded', async () => {
      const rows = await api.app.prisma.delivery.findMany({ where: { subscriptionId: sub.id } });
      return rows.length === all.length && rows.every((row) => row.status === 'succeeded');
    });
  });
});
