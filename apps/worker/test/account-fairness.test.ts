/**
 * Fair scheduling across accounts, end to end: account A floods 300 subscriptions at 10 events/s
 * (its default rate limit) while account B publishes steadily to 10. B's deliveries overtake A's
 * backlog instead of waiting behind it, and every accepted event of both arrives. Orders of
 * arrival are asserted, never durations.
 *
 * A's callbacks answer after {@link floodAnswerMs}, so A's backlog builds up by construction, not
 * by how slowly this machine drains it: with at most 2 × WORKER_CONCURRENCY attempts in flight
 * (delivery jobs and as many inline ones), A's deliveries arrive at no more than 100 per answer
 * time, whatever the CPU.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';

let stack: TestStack;
let floodReceiver: Receiver;
const queueTarget = 100;
const concurrency = 50;
/** How long A's callbacks take to answer, in ms. */
const floodAnswerMs = 100;

beforeAll(async () => {
  stack = await startTestStack('account-fairness', {
    WORKER_CONCURRENCY: String(concurrency),
    DELIVERY_QUEUE_TARGET: String(queueTarget),
    ACCOUNT_OVERRIDES: JSON.stringify({ 'acct-flood': { max_subscriptions: 300 } }),
  });
  floodReceiver = await startReceiver({ answer: { status: 200, afterMs: floodAnswerMs } });
});
afterAll(async () => {
  await stack.close();
  await floodReceiver.close();
}, 60_000);

const floodSubscriptions = 300;
const steadySubscriptions = 10;

describe('an account flooding within its limits', () => {
  it("does not make another account's deliveries wait behind its backlog", async () => {
    const { receiver, publisher } = stack;
    for (let i = 0; i < floodSubscriptions; i++)
      await stack.subscribe('acct-flood', { callback_url: `${floodReceiver.url}/flood/${i}` });
    for (let i = 0; i < steadySubscriptions; i++)
      await stack.subscribe('acct-steady', { callback_url: `${receiver.url}/steady/${i}` });

    const publish = (accountId: string) =>
      publisher.publish({ accountId, type: 'call.completed', data: { call_id: 'c' } });
    const flood = new Map<string, number>();
    const steady: Array<{ id: string; acceptedAt: number }> = [];
    // A: 10 events a second for 3 s, 9,000 deliveries; B: an event every 250 ms from 1 s in.
    const flooding = (async () => {
      for (let i = 0; i < 30; i++) {
        flood.set((await publish('acct-flood')).id, Date.now());
        await sleep(100);
      }
    })();
    await sleep(1_000);
    for (let i = 0; i < 8; i++) {
      const { id } = await publish('acct-steady');
      steady.push({ id, acceptedAt: Date.now() });
      await sleep(250);
    }
    await flooding;

    const expected = flood.size * floodSubscriptions + steady.length * steadySubscriptions;
    await waitFor(
      'every delivery of both accounts',
      () => floodReceiver.requests.length + receiver.requests.length >= expected,
      120_000,
    );
    const arrivals = [...floodReceiver.requests, ...receiver.requests];
    const arrived = new Set(arrivals.map((r) => `${r.path} ${String(r.headers['webhook-id'])}`));
    expect(arrived.size).toBe(expected);

    const floodArrivals = arrivals
      .filter((r) => r.path.startsWith('/flood/'))
      .map((r) => ({ at: r.at, acceptedAt: flood.get(String(r.headers['webhook-id']))! }));
    let largestBacklog = 0;
    for (const event of steady) {
      const received = arrivals.filter(
        (r) => r.path.startsWith('/steady/') && r.headers['webhook-id'] === event.id,
      );
      expect(received).toHaveLength(steadySubscriptions);
      const lastArrival = Math.max(...received.map((r) => r.at));
      // A's deliveries that arrived while this event of B was on its way: at most about the short
      // queue and the worker slots, however long A's backlog was.
      const overtaking = floodArrivals.filter(({ at }) => at > event.acceptedAt && at <= lastArrival).length;
      expect(overtaking).toBeLessThanOrEqual(2 * (queueTarget + concurrency));
      // A's deliveries accepted before this event of B and delivered after it: B went ahead of them.
      const overtaken = floodArrivals.filter(
        ({ at, acceptedAt }) => acceptedAt < event.acceptedAt && at > lastArrival,
      ).length;
      largestBacklog = Math.max(largestBacklog, overtaken);
    }
    // In arrival order, B would have waited behind every one of those. A's slow answers make this
    // backlog: by B's last event A has published about 8,000 deliveries, and at most 100 of them
    // per floodAnswerMs can have arrived.
    expect(largestBacklog).toBeGreaterThan(4 * (queueTarget + concurrency));
  }, 180_000);
});
