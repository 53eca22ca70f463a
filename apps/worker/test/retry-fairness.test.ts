/**
 * Retries go through the account scheduler, end to end: account A's callbacks fail slowly, so its
 * retries pile up faster than the workers send them, while account B publishes steadily. B's
 * deliveries overtake A's retries instead of waiting behind them in the queue, and every attempt
 * of both is made. Orders of arrival are asserted, never durations.
 *
 * A has as many subscriptions as a turn's share, so each of its events is admitted as a quiet
 * account's would be (the queue's front lane), and so are the retries that follow: without their
 * turns, they fill the front lane, and B's deliveries wait behind every one of them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../test/support/wait.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';

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
    const steady: Array<{ id: string; acceptedAt: number }> = [];
    for (let i = 0; i < 8; i++) {
      const { id } = await publish('acct-steady');
      steady.push({ id, acceptedAt: Date.now() });
      await sleep(250);
    }
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
    let largestWait = 0;
    for (const event of steady) {
      const received = receiver.requests.filter((r) => r.headers['webhook-id'] === event.id);
      expect(received).toHaveLength(steadySubscriptions);
      const lastArrival = Math.max(...received.map((r) => r.at));
      // A's attempts that arrived while this event of B was on its way: at most about the short
      // queue and the worker slots, however many of A's retries were due.
      const overtaking = floodArrivals.filter((at) => at > event.acceptedAt && at <= lastArrival).length;
      largestWait = Math.max(largestWait, overtaking);
    }
    // Without turns for retries, 179 of A's attempts went ahead of one of B's events.
    expect(largestWait).toBeLessThanOrEqual(queueTarget + 2 * concurrency);
  }, 180_000);
});
