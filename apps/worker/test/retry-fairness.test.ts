/**
 * Retries and recovered rounds do not go ahead of another account's deliveries, end to end. Orders
 * of arrival are asserted, never durations.
 *
 * - Retries: account A's callbacks fail slowly, so its retries pile up faster than the workers
 *   send them, while account B publishes steadily. A has as many subscriptions as a turn's share,
 *   so each of its events is admitted as a quiet account's would be (the queue's front lane), and
 *   so are the retries that follow: without their turns, they fill the front lane, and B's
 *   deliveries wait behind every one of them.
 * - Recovery: A recovers 2,000 failed deliveries, unpaced, while B publishes; the rounds wait
 *   behind both lanes, behind B's deliveries. And a recovery at its budget's pace leaves a live
 *   delivery of the same subscription ahead of its later rounds.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { deliveryJobId, nextRound, parkedDeliveriesKey, queueNames } from '@webhooks/shared';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { insertFailedDeliveries } from '../../../test/support/failed-deliveries.js';

/**
 * The most of A's arrivals while one of B's events was on its way, over B's `events`: at most about
 * the short queue and the worker slots when B goes ahead of A's backlog.
 */
function largestOvertaking(
  floodArrivals: readonly number[],
  steady: ReadonlyArray<{ id: string; acceptedAt: number }>,
  steadyReceiver: Receiver,
  perEvent: number,
): number {
  let largest = 0;
  for (const event of steady) {
    const received = steadyReceiver.requests.filter((r) => r.headers['webhook-id'] === event.id);
    expect(received).toHaveLength(perEvent);
    const lastArrival = Math.max(...received.map((r) => r.at));
    const overtaking = floodArrivals.filter((at) => at > event.acceptedAt && at <= lastArrival).length;
    largest = Math.max(largest, overtaking);
  }
  return largest;
}

/** B's events: one every 250 ms, 8 in all, with when each was accepted. */
async function publishSteadily(publish: () => Promise<{ id: string }>) {
  const steady: Array<{ id: string; acceptedAt: number }> = [];
  for (let i = 0; i < 8; i++) {
    const { id } = await publish();
    steady.push({ id, acceptedAt: Date.now() });
    await sleep(250);
  }
  return steady;
}

let stack: TestStack;
let floodReceiver: Receiver;
const queueTarget = 40;
const concurrency = 20;
const maxAttempts = 4;
/** How long A's callbacks take to answer 500, in ms: at most 2 × concurrency attempts per answer. */
const floodAnswerMs = 200;

beforeAll(async () => {
  stack = await startTestStack('retry-fairness', {
    WORKER_CONCURRENCY: String(concurrency),
    DELIVERY_QUEUE_TARGET: String(queueTarget),
    DELIVERY_MAX_ATTEMPTS: String(maxAttempts),
    DELIVERY_BACKOFF_MS: '50',
    SUBSCRIPTION_DISABLE_AFTER: '1000000',
    // A's retries are what this test pits against B: its breakers must not hold them.
    BREAKER_FAILURES_IN_ROW: '1000000',
    BREAKER_MIN_ATTEMPTS: '1000000',
  });
  floodReceiver = await startReceiver({ answer: { status: 500, afterMs: floodAnswerMs } });
});
afterAll(async () => {
  await stack.close();
  await floodReceiver.close();
}, 60_000);

const floodSubscriptions = 10;
const steadySubscriptions = 2;

describe('an account whose callbacks fail', () => {
  it("does not make another account's deliveries wait behind its retries", async () => {
    const { receiver, publisher } = stack;
    for (let i = 0; i < floodSubscriptions; i++)
      await stack.subscribe('acct-flood', { callback_url: `${floodReceiver.url}/flood/${i}` });
    for (let i = 0; i < steadySubscriptions; i++)
      await stack.subscribe('acct-steady', { callback_url: `${receiver.url}/steady/${i}` });

    const publish = (accountId: string) =>
      publisher.publish({ accountId, type: 'call.completed', data: { call_id: 'c' } });
    // A: 20 events a second for 3 s, 600 deliveries and 2,400 attempts, against at most 200
    // attempts a second; B: an event every 250 ms from 1.5 s in.
    let floodEvents = 0;
    const flooding = (async () => {
      for (let i = 0; i < 60; i++) {
        await publish('acct-flood');
        floodEvents += 1;
        await sleep(50);
      }
    })();
    await sleep(1_500);
    const steady = await publishSteadily(() => publish('acct-steady'));
    await flooding;

    await waitFor(
      "every delivery of B, and every attempt of A's",
      () =>
        receiver.requests.length >= steady.length * steadySubscriptions &&
        floodReceiver.requests.length >= floodEvents * floodSubscriptions * maxAttempts,
      120_000,
    );
    expect(floodReceiver.requests).toHaveLength(floodEvents * floodSubscriptions * maxAttempts);
    const floodArrivals = floodReceiver.requests.map((r) => r.at);
    // Without turns for retries, 179 of A's attempts went ahead of one of B's events.
    expect(largestOvertaking(floodArrivals, steady, receiver, steadySubscriptions)).toBeLessThanOrEqual(
      queueTarget + 2 * concurrency,
    );
  }, 180_000);
});

describe('an account recovering many deliveries', () => {
  let recovery: TestStack;
  let slowReceiver: Receiver;
  beforeAll(async () => {
    recovery = await startTestStack('recover-fairness', {
      WORKER_CONCURRENCY: String(concurrency),
      DELIVERY_QUEUE_TARGET: String(queueTarget),
      // A budget no recovery here reaches, so the rounds are not paced: the lanes alone keep B ahead.
      RECOVER_ROUNDS_PER_MINUTE: '1000000',
    });
    // A's callbacks answer after 100 ms: at most 2 × concurrency of its rounds per 100 ms.
    slowReceiver = await startReceiver({ answer: { status: 200, afterMs: 100 } });
  });
  afterAll(async () => {
    await recovery.close();
    await slowReceiver.close();
  }, 60_000);

  it("does not make another account's deliveries wait behind the recovered rounds", async () => {
    const { receiver, publisher, api } = recovery;
    const since = new Date(Date.now() - 1_000).toISOString();
    const recovered = [];
    for (let i = 0; i < 10; i++) {
      const sub = await recovery.subscribe('acct-flood', { callback_url: `${slowReceiver.url}/flood/${i}` });
      await insertFailedDeliveries(recovery, 'acct-flood', sub.id, 200);
      recovered.push(sub.id);
    }
    for (let i = 0; i < steadySubscriptions; i++)
      await recovery.subscribe('acct-steady', { callback_url: `${receiver.url}/steady/${i}` });

    for (const id of recovered) {
      const answer = await api.app.inject({
        method: 'POST',
        url: `/api/webhooks/${id}/recover`,
        headers: api.auth('acct-flood'),
        payload: { since },
      });
      expect([answer.statusCode, answer.json().count]).toEqual([202, 200]);
    }
    const steady = await publishSteadily(() =>
      publisher.publish({ accountId: 'acct-steady', type: 'call.completed', data: { call_id: 'c' } }),
    );

    await waitFor(
      'every recovered delivery of A, and every delivery of B',
      () =>
        slowReceiver.requests.length >= 2_000 &&
        receiver.requests.length >= steady.length * steadySubscriptions,
      120_000,
    );
    // Each once.
    expect(slowReceiver.requests).toHaveLength(2_000);
    const floodArrivals = slowReceiver.requests.map((r) => r.at);
    // In the front lane, B's first event waited behind 1,951 of A's rounds.
    expect(largestOvertaking(floodArrivals, steady, receiver, steadySubscriptions)).toBeLessThanOrEqual(
      queueTarget + 2 * concurrency,
    );
  }, 180_000);

  it("sends the rounds at the budget's pace, counted in the account's backlog while they wait, behind a live delivery published after them", async () => {
    // 12 rounds a minute: one every 5 s.
    const paced = await startTestStack('recover-pace', { RECOVER_ROUNDS_PER_MINUTE: '12' });
    const redis = new Redis(testRedisUrl);
    const queue = new Queue(queueNames.deliveries, {
      connection: { url: testRedisUrl },
      prefix: paced.api.prefix,
    });
    try {
      const { receiver, publisher, api } = paced;
      const sub = await paced.subscribe('acct-paced', { callback_url: `${receiver.url}/paced` });
      await insertFailedDeliveries(paced, 'acct-paced', sub.id, 2);
      const failed = await api.app.prisma.delivery.findMany({
        where: { subscriptionId: sub.id },
        orderBy: { id: 'asc' },
      });
      const answer = await api.app.inject({
        method: 'POST',
        url: `/api/webhooks/${sub.id}/recover`,
        headers: api.auth('acct-paced'),
        payload: { since: new Date(Date.now() - 60_000).toISOString() },
      });
      expect([answer.statusCode, answer.json().count]).toEqual([202, 2]);
      // The minute's second round waits its turn in BullMQ's delayed set.
      const second = await queue.getJob(
        deliveryJobId(failed[1]!.eventId, sub.id, nextRound(failed[1]!.attemptsMade)),
      );
      expect(await second?.getState()).toBe('delayed');
      // And counts in its account's share of the backlog bound while it waits. From its own due
      // time: the first round may be delayed by a step too, and still due when a slow machine reads.
      const parked = await redis.zcount(
        parkedDeliveriesKey(paced.api.prefix, 'acct-paced'),
        second!.timestamp + second!.delay,
        '+inf',
      );
      expect(parked).toBe(1);
      await waitFor('the first round', () => receiver.at('/paced').length === 1, 30_000);
      const live = await publisher.publish({ accountId: 'acct-paced', type: 'call.completed', data: {} });

      await waitFor(
        'both recovered rounds and the live delivery',
        () => receiver.at('/paced').length >= 3,
        60_000,
      );
      expect(receiver.at('/paced').map((r) => r.headers['webhook-id'])).toEqual([
        failed[0]!.eventId,
        live.id,
        failed[1]!.eventId,
      ]);
    } finally {
      await queue.close();
      redis.disconnect();
      await paced.close();
    }
  }, 90_000);
});
