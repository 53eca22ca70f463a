/**
 * The account scheduler against the real Redis: deficit round robin over accounts, weights, a
 * queue kept short, a quiet account's deliveries taken before a backlogged one's, idempotent
 * scheduling, and entries admitted again after a scheduler died between admitting them and adding
 * their jobs. No worker runs: the tests read BullMQ's queue.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { deliveryJobId, queueNames, type DeliveryJobData } from '@webhooks/shared';
import type { DeliveryStep } from '../src/delivery/step.js';
import { createDispatch, type FanOutDelivery } from '../src/delivery/dispatch.js';
import {
  createInlineAttempts,
  type InlineAttempts,
  type InlineAttemptsOptions,
} from '../src/delivery/inline.js';
import { createWorkerMetrics } from '../src/metrics.js';
import {
  createAccountScheduler,
  type AccountScheduler,
  type AccountSchedulerOptions,
} from '../src/scheduling/account-scheduler.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from '../../../test/support/redis.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const redis = new Redis(testRedisUrl);
let prefix: string;
let queue: Queue<DeliveryJobData>;

beforeEach(() => {
  prefix = newQueuePrefix('sched');
  queue = new Queue(queueNames.deliveries, { connection: { url: testRedisUrl }, prefix });
});
afterEach(async () => {
  await queue.close();
  await dropPrefix(prefix);
});
afterAll(() => redis.disconnect());

/**
 * A scheduler with `overrides`, whose dispatcher adds the jobs of 3 attempts, or attempts in the
 * background with `attempts` (as a worker process that runs this shard's attempts).
 */
const scheduler = (
  overrides: Partial<Omit<AccountSchedulerOptions, 'dispatcher'>> = {},
  attempts?: InlineAttempts,
): AccountScheduler<FanOutDelivery> => {
  const deliveries = overrides.deliveries ?? queue;
  const queueTarget = overrides.queueTarget ?? 40;
  const log = pino({ level: 'silent' });
  const dispatcher = createDispatch({ deliveries, maxAttempts: 3, queueTarget, log });
  if (attempts !== undefined) dispatcher.attemptWith(attempts, { background: true });
  return createAccountScheduler({
    redis,
    prefix,
    deliveries,
    dispatcher,
    queueTarget,
    quantum: 10,
    leaseMs: 30_000,
    busyIntervalMs: 5,
    idleIntervalMs: 250,
    deliveriesPerSecond: 1_000,
    overrides: new Map(),
    log,
    ...overrides,
  });
};

/** A worker's inline attempts, 10 at once, sent through `deliverFor`'s attempt path. */
const inlineAttempts = (deliverFor: InlineAttemptsOptions['deliverFor']) =>
  createInlineAttempts({
    deliverFor,
    maxAttempts: 3,
    deadlineMs: 100,
    maxInFlight: 10,
    log: pino({ level: 'silent' }),
    metrics: createWorkerMetrics(),
  });

const deliveriesOf = (accountId: string, count: number): FanOutDelivery[] =>
  Array.from({ length: count }, () => ({ accountId, eventId: uuidv7(), subscriptionId: uuidv7() }));

/** `list` as its fan-out hands it over having just created the rows: the attempts may take them. */
const created = (list: FanOutDelivery[]) => list.map((d) => ({ ...d, created: true }));

/**
 * The queued jobs' subscription ids in the order BullMQ's workers take them: the wait list (quiet
 * accounts), oldest first, then the prioritized set (backlogged accounts).
 */
const waiting = async () =>
  [...(await queue.getWaiting(0, -1)), ...(await queue.getJobs(['prioritized'], 0, -1, true))].map(
    (job) => job.data.subscriptionId,
  );

/**
 * Fills both lanes of the queue to their target (40) with other accounts' deliveries, so that what
 * `schedule`s next waits in the scheduler; `queue.drain()` then makes room for one admission.
 */
const fillQueue = async (s: AccountScheduler<FanOutDelivery>) => {
  // 30 behind (a backlogged account's), then its last 10 and 30 of quiet accounts in front.
  await s.schedule(deliveriesOf('acct-filler', 40));
  for (const quiet of quietFillers) await s.schedule(deliveriesOf(quiet, 10));
  expect(await queue.getWaitingCount()).toBe(40);
  expect(await queue.getPrioritizedCount()).toBe(30);
};
const quietFillers = ['acct-filler-1', 'acct-filler-2', 'acct-filler-3'];

describe('the account scheduler', () => {
  it("admits a quiet account's deliveries at the first turn, ahead of a flooding account's backlog", async () => {
    const s = scheduler();
    await fillQueue(s);
    const flood = deliveriesOf('acct-flood', 1_000);
    const quiet = deliveriesOf('acct-quiet', 5);
    await s.schedule(flood);
    await s.schedule(quiet);

    expect(await s.backlog()).toEqual({ accounts: 2, deliveries: 1_005 });
    await queue.drain();
    expect(await s.admit()).toEqual({ admitted: 40, backlog: true });
    expect(await s.backlog()).toEqual({ accounts: 1, deliveries: 965 });
    // The quiet account's jobs are taken first, then the flood's, in its own order.
    expect(await waiting()).toEqual([...quiet, ...flood.slice(0, 35)].map((d) => d.subscriptionId));
  });

  it("keeps a backlog's queue short, and admits a quiet account at once beside it", async () => {
    const s = scheduler();
    const flood = deliveriesOf('acct-a', 100);
    await s.schedule(flood);
    expect(await queue.getPrioritizedCount()).toBe(40);
    expect(await s.admit()).toEqual({ admitted: 0, backlog: true });
    // Nothing more for the backlog until half the queue has been taken.
    for (const d of flood.slice(0, 19)) await queue.remove(deliveryJobId(d.eventId, d.subscriptionId));
    expect(await s.admit()).toEqual({ admitted: 0, backlog: true });

    const quiet = deliveriesOf('acct-b', 3);
    await s.schedule(quiet);
    expect(await s.holds(quiet)).toEqual([false, false, false]);
    expect((await waiting()).slice(0, 3)).toEqual(quiet.map((d) => d.subscriptionId));
    expect(await queue.getPrioritizedCount()).toBe(21);
  });

  it("gives what its inline attempts cannot take a job in its account's lane", async () => {
    // Attempts that never run here (the deliveries' shard is another process's): every admitted
    // delivery falls back to its job.
    const elsewhere = inlineAttempts(() => null);
    const s = scheduler({}, elsewhere);
    await s.start();
    await s.close();
    const flood = created(deliveriesOf('acct-a', 100));
    await s.schedule(flood);
    // No more than the attempts have room for is admitted (maxInFlight less the fifth kept for
    // quiet accounts); the rest waits its turn.
    expect(await queue.getPrioritizedCount()).toBe(8);
    const quiet = created(deliveriesOf('acct-b', 3));
    await s.schedule(quiet);
    expect((await waiting()).slice(0, 4)).toEqual([...quiet, flood[0]!].map((d) => d.subscriptionId));
    // The quiet account's schedule admitted another room's worth of the flood after it.
    expect(await s.backlog()).toEqual({ accounts: 1, deliveries: 84 });
  });

  it('admits no more than its free slots when two admissions overlap, keeping the quiet reserve', async () => {
    // Attempts that hang until the test ends them: each admitted delivery holds its slot.
    const hanging: Array<() => void> = [];
    const attempts = inlineAttempts(
      () => () =>
        new Promise<DeliveryStep>((resolve) =>
          hanging.push(() => resolve({ kind: 'ended', result: 'dropped' })),
        ),
    );
    const s = scheduler({}, attempts);
    await s.start();
    try {
      // Two fan-outs' admissions at once, as a fan-out's and the background admission can overlap.
      await Promise.all([
        s.schedule(created(deliveriesOf('acct-a', 30))),
        s.schedule(created(deliveriesOf('acct-b', 30))),
      ]);
      // The ten slots less the two kept for quiet accounts, all attempted: none became a job.
      expect(hanging).toHaveLength(8);
      expect(attempts.room()).toBe(2);
      expect(await waiting()).toEqual([]);
      expect((await s.backlog()).accounts).toBe(2);
    } finally {
      hanging.forEach((end) => end());
      await s.close();
    }
  });

  it('admits and confirms more deliveries at once than one Lua call can unpack (a large target)', async () => {
    const target = 10_000;
    const s = scheduler({ queueTarget: target, deliveriesPerSecond: 100_000 });
    // The queue full, so that what is scheduled waits for one admission of the whole target.
    await queue.addBulk(
      deliveriesOf('acct-filler', target).map((d) => ({
        name: 'deliver',
        data: { eventId: d.eventId, subscriptionId: d.subscriptionId, accountId: 'acct-filler', round: 0 },
      })),
    );
    await s.schedule(deliveriesOf('acct-large', target));
    expect(await s.backlog()).toEqual({ accounts: 1, deliveries: target });
    await queue.drain();
    expect(await s.admit()).toEqual({ admitted: target, backlog: false });
    expect(await s.backlog()).toEqual({ accounts: 0, deliveries: 0 });
    const queued = await queue.getJobCounts('wait', 'prioritized');
    expect(queued.wait! + queued.prioritized!).toBe(target);
  });

  it('shares each turn by weight (ACCOUNT_OVERRIDES)', async () => {
    const s = scheduler({ overrides: new Map([['acct-heavy', { weight: 3 }]]) });
    await s.start();
    await s.close();
    await fillQueue(s);
    const heavy = deliveriesOf('acct-heavy', 100);
    const light = deliveriesOf('acct-light', 100);
    await s.schedule(heavy);
    await s.schedule(light);
    await queue.drain();
    await s.admit();
    const admitted = new Set(await waiting());
    expect(heavy.filter((d) => admitted.has(d.subscriptionId))).toHaveLength(30);
    expect(light.filter((d) => admitted.has(d.subscriptionId))).toHaveLength(10);
  });

  it("delays an account past its deliveries-a-second quota while others' deliveries go on", async () => {
    const s = scheduler({
      deliveriesPerSecond: 5,
      overrides: new Map([
        ['acct-vip', { deliveries_per_second: 50 }],
        ...['acct-filler', ...quietFillers].map((id) => [id, { deliveries_per_second: 50 }] as const),
      ]),
    });
    await s.start();
    await s.close();
    await fillQueue(s);
    const capped = deliveriesOf('acct-capped', 30);
    const vip = deliveriesOf('acct-vip', 30);
    const other = deliveriesOf('acct-other', 3);
    await s.schedule(capped);
    await s.schedule(vip);
    await s.schedule(other);
    await queue.drain();
    await s.admit();
    const first = new Set(await waiting());
    // A second's worth each: 5 for the default quota, all the queue's room left for the override.
    expect(capped.filter((d) => first.has(d.subscriptionId))).toHaveLength(5);
    expect(other.filter((d) => first.has(d.subscriptionId))).toHaveLength(3);
    expect(vip.filter((d) => first.has(d.subscriptionId))).toHaveLength(30);
    expect(await s.holds(capped)).toEqual(capped.map((_, i) => i >= 5));

    await queue.drain();
    const more = await waitFor('the capped account admitted again as its bucket refills', async () => {
      await s.admit();
      const admitted = new Set(await waiting());
      return capped.filter((d) => admitted.has(d.subscriptionId)).length > 0 && admitted;
    });
    // In order, from where the account stopped, and within the quota.
    const next = capped.filter((d) => more.has(d.subscriptionId)).map((d) => d.subscriptionId);
    expect(next).toEqual(capped.slice(5, 5 + next.length).map((d) => d.subscriptionId));
    expect(next.length).toBeLessThanOrEqual(5);
  });

  it('holds a delivery once however often the fan-out hands it over', async () => {
    const s = scheduler();
    await fillQueue(s);
    const [one] = deliveriesOf('acct-a', 1);
    await s.schedule([one!, one!]);
    await s.schedule([one!]);
    expect(await s.holds([one!])).toEqual([true]);
    expect(await s.backlog()).toEqual({ accounts: 1, deliveries: 1 });
    await queue.drain();
    expect(await s.admit()).toEqual({ admitted: 1, backlog: false });
    expect(await s.holds([one!])).toEqual([false]);
    expect(await waiting()).toEqual([one!.subscriptionId]);
  });

  it('admits again, once their lease ends, the entries of a scheduler that could not add their jobs', async () => {
    // A queue whose connection is closed fails the adds, as a scheduler killed at that moment would.
    const broken = new Queue<DeliveryJobData>(queueNames.deliveries, {
      connection: { url: testRedisUrl },
      prefix,
    });
    await broken.close();
    const dying = scheduler({ deliveries: broken, leaseMs: 300 });
    const lost = deliveriesOf('acct-a', 3);
    await expect(dying.schedule(lost)).rejects.toThrow();
    expect(await dying.holds(lost)).toEqual([true, true, true]);
    expect(await waiting()).toEqual([]);

    const survivor = scheduler({ leaseMs: 300 });
    await waitFor('the entries admitted again', async () => (await survivor.admit()).admitted === 3);
    expect((await waiting()).sort()).toEqual(lost.map((d) => d.subscriptionId).sort());
    expect(await survivor.holds(lost)).toEqual([false, false, false]);
  });
});
