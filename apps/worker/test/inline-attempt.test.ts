/**
 * The inline first attempt, through the real services: a confirmed first delivery costs no
 * delivery job, whether the fan-out or the account scheduler's later admission sends it; a failed
 * one continues as a job whose attempts count the inline one; and a callback slower than
 * DELIVERY_INLINE_DEADLINE_MS does not hold the fan-out job yet is attempted once, even when the
 * round gets a job while its inline attempt is still in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Job, Queue } from 'bullmq';
import { deliveryJob, deliveryJobId, eventJob, queueNames } from '@webhooks/shared';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

const maxAttempts = 3;
const backoffMs = 100;
const deadlineMs = 200;
/** WORKER_CONCURRENCY: the inline attempts a worker runs at once. */
const inlineRoom = 8;
/** The slow callback's answer: far past the deadline, so that the fan-out's end is seen before it. */
const slowAnswerMs = deadlineMs * 25;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('inline-attempt', {
    DELIVERY_MAX_ATTEMPTS: String(maxAttempts),
    DELIVERY_BACKOFF_MS: String(backoffMs),
    DELIVERY_TIMEOUT_MS: String(slowAnswerMs * 2),
    DELIVERY_INLINE_DEADLINE_MS: String(deadlineMs),
    // Fewer inline attempts at once than the wide fan-out below has subscriptions.
    WORKER_CONCURRENCY: String(inlineRoom),
  });
});
afterAll(() => stack.close());

/** The job ids the `deliveries` queue was ever given (BullMQ's `added` events). */
async function addedDeliveryJobs(): Promise<string[]> {
  const worker = stack.worker.deliveries[0]!;
  const entries = await stack.worker.redis.xrange(worker.keys.events!, '-', '+');
  return entries.flatMap(([, fields]) => {
    const field = (name: string) => fields[fields.indexOf(name) + 1];
    return field('event') === 'added' ? [field('jobId')!] : [];
  });
}

/** `webhook_inline_attempts_total{result}` of the stack's worker. */
async function inlineAttempts(result: 'sent' | 'waiting' | 'skipped'): Promise<number> {
  const metric = await stack.worker.metrics.getSingleMetric('webhook_inline_attempts_total')!.get();
  return metric.values.find((v) => v.labels.result === result)?.value ?? 0;
}

const deliveryOf = (subscriptionId: string, eventId: string) =>
  stack.worker.prisma.delivery.findFirst({ where: { eventId, subscriptionId } });

/** The delivery of `eventId` to `subscriptionId`, once it is `status`. */
const deliveryOnce = (subscriptionId: string, eventId: string, status: 'succeeded' | 'failed') =>
  waitFor(`delivery ${status}`, async () => {
    const row = await deliveryOf(subscriptionId, eventId);
    return row?.status === status && row;
  });

/** Subscribes `account` at the receiver's `path` and publishes one event to it. */
async function publishTo(account: string, path: string) {
  const sub = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
  const published = await stack.publisher.publish({
    accountId: account,
    type: 'call.completed',
    data: { path },
  });
  return {
    subscriptionId: sub.id,
    eventId: published.id,
    jobId: deliveryJobId(published.id, sub.id),
    // The fan-out job as published: a completed one is removed, so a test running it again adds this.
    fanOutJob: eventJob({
      id: published.id,
      accountId: account,
      type: 'call.completed',
      data: { path },
      timestamp: published.timestamp!,
    }),
  };
}

describe('the inline first attempt', () => {
  it('confirms a delivery without ever queueing a delivery job', async () => {
    const sentBefore = await inlineAttempts('sent');
    const { subscriptionId, eventId, jobId } = await publishTo('acct-inline-ok', '/inline-ok');
    await deliveryOnce(subscriptionId, eventId, 'succeeded');
    expect(stack.receiver.at('/inline-ok')).toHaveLength(1);
    expect(await addedDeliveryJobs()).not.toContain(jobId);
    // The row is stored inside the attempt; the counter moves once the attempt has returned.
    await waitFor('the inline attempt counted', async () => (await inlineAttempts('sent')) > sentBefore);
    expect(await inlineAttempts('sent')).toBe(sentBefore + 1);
  });

  it('hands a failed attempt to a job that ends the round after DELIVERY_MAX_ATTEMPTS in all', async () => {
    stack.receiver.script('/inline-fail', [500]);
    const { subscriptionId, eventId, jobId } = await publishTo('acct-inline-fail', '/inline-fail');
    const delivery = await deliveryOnce(subscriptionId, eventId, 'failed');
    expect(delivery.attemptsMade).toBe(maxAttempts);
    expect(await addedDeliveryJobs()).toContain(jobId);
    // BullMQ's own count: the job made every attempt but the inline one. The row is recorded
    // inside the last attempt; BullMQ counts it once the processor has returned.
    const job = await waitFor('the delivery job ended', async () => {
      const found = await Job.fromId(stack.worker.deliveries[0]!, jobId);
      return found?.finishedOn !== undefined && found;
    });
    expect(job.attemptsMade).toBe(maxAttempts - 1);
    await sleep(backoffMs * 8);
    expect(stack.receiver.at('/inline-fail')).toHaveLength(maxAttempts);
  });

  it('sends its retry the body of the inline attempt, byte for byte', async () => {
    // Keys in an order PostgreSQL's jsonb does not keep (it sorts them, shorter first): the retry
    // reads the event from the log, the inline attempt from its fan-out.
    stack.receiver.script('/inline-body', [500, 200]);
    const sub = await stack.subscribe('acct-inline-body', {
      callback_url: `${stack.receiver.url}/inline-body`,
    });
    const { id: eventId } = await stack.publisher.publish({
      accountId: 'acct-inline-body',
      type: 'call.completed',
      data: { zeta_long_key: 1, nested: { yy: 1, x: 2 }, a: 'first' },
    });
    await deliveryOnce(sub.id, eventId, 'succeeded');
    const [inline, retry] = stack.receiver.at('/inline-body');
    expect(retry?.body).toBe(inline?.body);
    expect(JSON.parse(inline!.body)).toMatchObject({
      data: { zeta_long_key: 1, nested: { yy: 1, x: 2 }, a: 'first' },
    });
  });

  it('does not hold the fan-out for a callback slower than the deadline, and sends it once', async () => {
    stack.receiver.script('/inline-slow', [{ status: 200, afterMs: slowAnswerMs }]);
    const { subscriptionId, eventId, jobId } = await publishTo('acct-inline-slow', '/inline-slow');
    const fanOut = stack.worker.events[0]!;
    // A completed fan-out job is removed.
    await waitFor('the fan-out job completed', async () => (await Job.fromId(fanOut, eventId)) === undefined);
    // The fan-out ended while its inline attempt was still waiting for the callback's answer.
    expect(stack.receiver.at('/inline-slow')).toHaveLength(1);
    expect((await deliveryOf(subscriptionId, eventId))?.status).toBe('pending');
    const delivery = await deliveryOnce(subscriptionId, eventId, 'succeeded');
    expect(delivery.attemptsMade).toBe(1);
    expect(stack.receiver.at('/inline-slow')).toHaveLength(1);
    expect(await addedDeliveryJobs()).not.toContain(jobId);
  });

  it("sends a fan-out's first attempts past the front lane's share without delivery jobs", async () => {
    // More subscriptions than one round-robin turn admits (10), and than the worker attempts at
    // once: the account scheduler admits the rest in turns, as the attempts leave room, and its
    // admission attempts them as it admits them.
    const account = 'acct-inline-wide';
    const subscriptions = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        stack.subscribe(account, { callback_url: `${stack.receiver.url}/inline-wide/${i}` }),
      ),
    );
    const sentBefore = await inlineAttempts('sent');
    const { id: eventId } = await stack.publisher.publish({
      accountId: account,
      type: 'call.completed',
      data: { wide: true },
    });
    for (const sub of subscriptions) await deliveryOnce(sub.id, eventId, 'succeeded');
    subscriptions.forEach((_, i) => expect(stack.receiver.at(`/inline-wide/${i}`)).toHaveLength(1));
    const added = new Set(await addedDeliveryJobs());
    expect(subscriptions.filter((sub) => added.has(deliveryJobId(eventId, sub.id)))).toEqual([]);
    const sentAll = sentBefore + subscriptions.length;
    await waitFor('the inline attempts counted', async () => (await inlineAttempts('sent')) >= sentAll);
    expect(await inlineAttempts('sent')).toBe(sentAll);
  });

  it("keeps inline slots for a quiet account's first attempt while a wide fan-out's attempts hang", async () => {
    // Twenty slow callbacks of one account: its admissions take the slots they may (all but the
    // fifth kept for quiet accounts) and hang there.
    const busy = 'acct-inline-busy';
    const hangMs = 2_000;
    const quietAccount = 'acct-inline-quiet';
    const quiet = await stack.subscribe(quietAccount, {
      callback_url: `${stack.receiver.url}/inline-quiet`,
    });
    const slow = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        stack.receiver.script(`/inline-busy/${i}`, [{ status: 200, afterMs: hangMs }]);
        return stack.subscribe(busy, { callback_url: `${stack.receiver.url}/inline-busy/${i}` });
      }),
    );
    const { id: busyEvent } = await stack.publisher.publish({
      accountId: busy,
      type: 'call.completed',
      data: { busy: true },
    });
    const hanging = () => slow.filter((_, i) => stack.receiver.at(`/inline-busy/${i}`).length > 0).length;
    await waitFor('the busy account holding its slots', async () => hanging() === inlineRoom - 1);

    const { id: eventId } = await stack.publisher.publish({
      accountId: quietAccount,
      type: 'call.completed',
      data: { quiet: true },
    });
    await deliveryOnce(quiet.id, eventId, 'succeeded');
    const jobId = deliveryJobId(eventId, quiet.id);
    // Sent while the busy account's attempts still hung, by its fan-out, without a delivery job.
    expect(hanging()).toBe(inlineRoom - 1);
    expect(await addedDeliveryJobs()).not.toContain(jobId);
    for (const sub of slow) await deliveryOnce(sub.id, busyEvent, 'succeeded');
  });

  it('does not attempt inline again when the fan-out runs again while the delivery has its job', async () => {
    // The first attempt is refused for a minute: its retry job waits, and the delivery stays pending.
    stack.receiver.script('/inline-again', [{ status: 429, headers: { 'retry-after': '60' } }, 200]);
    const { subscriptionId, eventId, jobId, fanOutJob } = await publishTo(
      'acct-inline-again',
      '/inline-again',
    );
    await waitFor('the retry job', async () => (await addedDeliveryJobs()).includes(jobId));
    // The fan-out runs again, as after its worker died before acknowledging it.
    const events = new Queue(queueNames.events, { connection: stack.worker.redis, prefix: stack.api.prefix });
    try {
      await waitFor(
        'the fan-out job completed',
        async () => (await Job.fromId(events, eventId)) === undefined,
      );
      const again = await events.add(fanOutJob.name, fanOutJob.data, fanOutJob.opts);
      expect(again.id).toBe(eventId);
      await waitFor('the fan-out run again', async () => (await Job.fromId(events, eventId)) === undefined);
    } finally {
      await events.close();
    }
    await sleep(deadlineMs * 2);
    expect(stack.receiver.at('/inline-again')).toHaveLength(1);
    expect((await deliveryOf(subscriptionId, eventId))?.attemptsMade).toBe(1);
  });

  it('sends a delivery once when its round gets a job while the inline attempt is in flight', async () => {
    stack.receiver.script('/inline-overlap', [{ status: 200, afterMs: slowAnswerMs }]);
    const { subscriptionId, eventId } = await publishTo('acct-inline-overlap', '/inline-overlap');
    await waitFor(
      'the inline attempt at the callback',
      () => stack.receiver.at('/inline-overlap').length === 1,
    );
    // The round gets its job meanwhile, as when the admission's lease ends before the attempt does
    // on a saturated worker, or a stalled fan-out runs again.
    const deliveries = new Queue(queueNames.deliveries, {
      connection: stack.worker.redis,
      prefix: stack.api.prefix,
    });
    try {
      const job = deliveryJob(
        { eventId, subscriptionId, accountId: 'acct-inline-overlap', round: 0 },
        maxAttempts,
      );
      const added = await deliveries.add(job.name, job.data, job.opts);
      await deliveryOnce(subscriptionId, eventId, 'succeeded');
      await waitFor('the job done', async () => (await Job.fromId(deliveries, added.id!)) === undefined);
    } finally {
      await deliveries.close();
    }
    expect(stack.receiver.at('/inline-overlap')).toHaveLength(1);
    expect((await deliveryOf(subscriptionId, eventId))?.attemptsMade).toBe(1);
  });
});
