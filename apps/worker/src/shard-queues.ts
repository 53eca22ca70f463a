/**
 * The worker's side of sharded queues (QUEUE_SHARDS): each shard's `events` and `deliveries` queues
 * and account scheduler, and the routing to a shard. A worker produces into every shard and
 * consumes WORKER_SHARDS, plus the layout it drains (QUEUE_SHARDS_DRAIN).
 */
import { Queue } from 'bullmq';
import {
  createDeliveryQueues,
  noticeJob,
  queueNames,
  type AccountOverride,
  type DeliveryJobData,
  type DeliveryQueues,
  type EventJobData,
  type QueueShards,
  type ShardQueueOptions,
} from '@webhooks/shared';
import { createDispatch, type Dispatch, type FanOutDelivery } from './delivery/dispatch.js';
import type { InlineAttempts } from './delivery/inline.js';
import {
  createAccountScheduler,
  type AccountScheduler,
  type AccountSchedulerOptions,
} from './scheduling/account-scheduler.js';

/** One shard's queues and scheduler. */
export interface ShardQueues {
  /** Its key prefix (`{webhooks:3}`; the service's key prefix with one shard). */
  prefix: string;
  /** Its label in metrics: the shard number, with `drain-` before a drained layout's. */
  label: string;
  events: Queue<EventJobData>;
  deliveries: Queue<DeliveryJobData>;
  scheduler: AccountScheduler<FanOutDelivery>;
  /** What becomes of what its scheduler admits. */
  dispatch: Dispatch;
}

/** Every shard a worker knows, and where an account's or a subscription's work goes. */
export interface ShardedQueues {
  /** The shards of QUEUE_SHARDS, by number. */
  current: readonly ShardQueues[];
  /** Every shard: the current ones, then those of the drained layout not among them. */
  all: readonly ShardQueues[];
  /** The shards this worker consumes: WORKER_SHARDS of the current ones, and every drained one. */
  consumed: readonly ShardQueues[];
  ofAccount(accountId: string): ShardQueues;
  ofSubscription(subscriptionId: string): ShardQueues;
  /** Schedules first deliveries on their subscriptions' shards. @throws as AccountScheduler.schedule */
  schedule(deliveries: readonly FanOutDelivery[]): Promise<void>;
  /** Hands inline attempts to every shard's dispatcher (the fan-out's own everywhere, background where consumed). */
  attemptWith(attempts: InlineAttempts): void;
  /** Adds delivery jobs to their subscriptions' shards, past the scheduler (FIFO heads, re-driven, notices). */
  addDeliveries: DeliveryQueues['add'];
  /** Adds operational notices' fan-out jobs (`noticeJob`) to their accounts' shards. @throws BullMQ's errors */
  addNotices(notices: readonly EventJobData[]): Promise<void>;
  /** Closes every scheduler, then every queue. */
  close(): Promise<void>;
}

/** What {@link createShardedQueues} needs. */
export interface ShardedQueuesOptions {
  shards: QueueShards;
  /** QUEUE_SHARDS_DRAIN's layout, or null. */
  drain: QueueShards | null;
  /** WORKER_SHARDS: numbers of the current shards consumed. */
  workerShards: readonly number[];
  /** Options of every queue but its prefix (the producer connection, telemetry). */
  queueOptions: ShardQueueOptions;
  /** The scheduler's options but per-shard ones; per-account quotas are split evenly over the shards, rounded up. */
  scheduler: Omit<AccountSchedulerOptions, 'prefix' | 'deliveries' | 'dispatcher'>;
  /** DELIVERY_MAX_ATTEMPTS, for the jobs the dispatchers add. */
  maxAttempts: number;
}

/** Creates the queues and schedulers of every shard (the schedulers are not started). */
export function createShardedQueues(options: ShardedQueuesOptions): ShardedQueues {
  const { shards, drain } = options;
  const count = shards.count;
  const share = (rate: number) => Math.max(1, Math.ceil(rate / count));
  const overrides = new Map<string, AccountOverride>(
    [...options.scheduler.overrides].map(([account, override]) => [
      account,
      override.deliveries_per_second === undefined
        ? override
        : { ...override, deliveries_per_second: share(override.deliveries_per_second) },
    ]),
  );
  const deliveryQueues = createDeliveryQueues(shards, options.queueOptions);
  const open = (prefix: string, label: string, deliveries: Queue<DeliveryJobData>): ShardQueues => {
    const dispatch = createDispatch({
      deliveries,
      maxAttempts: options.maxAttempts,
      queueTarget: options.scheduler.queueTarget,
      log: options.scheduler.log,
    });
    return {
      prefix,
      label,
      events: new Queue<EventJobData>(queueNames.events, { ...options.queueOptions, prefix }),
      deliveries,
      dispatch,
      scheduler: createAccountScheduler({
        ...options.scheduler,
        deliveriesPerSecond: share(options.scheduler.deliveriesPerSecond),
        overrides,
        prefix,
        deliveries,
        dispatcher: dispatch,
      }),
    };
  };
  const current = shards.prefixes.map((prefix, shard) =>
    open(prefix, String(shard), deliveryQueues.all[shard]!),
  );
  const drained = (drain?.prefixes ?? [])
    .map((prefix, shard) => ({ prefix, shard }))
    .filter(({ prefix }) => !shards.prefixes.includes(prefix))
    .map(({ prefix, shard }) =>
      open(
        prefix,
        `drain-${shard}`,
        new Queue<DeliveryJobData>(queueNames.deliveries, { ...options.queueOptions, prefix }),
      ),
    );
  const all = [...current, ...drained];
  const consumed = [...options.workerShards.map((shard) => current[shard]!), ...drained];
  return {
    current,
    all,
    consumed,
    ofAccount: (accountId) => current[shards.ofAccount(accountId)]!,
    ofSubscription: (subscriptionId) => current[shards.ofSubscription(subscriptionId)]!,
    async schedule(deliveries) {
      await Promise.all(
        [...shards.bySubscription(deliveries)].map(([shard, group]) =>
          current[shard]!.scheduler.schedule(group),
        ),
      );
    },
    attemptWith(attempts) {
      for (const shard of all) shard.dispatch.attemptWith(attempts, { background: consumed.includes(shard) });
    },
    addDeliveries: deliveryQueues.add,
    async addNotices(notices) {
      const byShard = new Map<ShardQueues, EventJobData[]>();
      for (const notice of notices) {
        const shard = current[shards.ofAccount(notice.accountId)]!;
        byShard.set(shard, [...(byShard.get(shard) ?? []), notice]);
      }
      await Promise.all([...byShard].map(([shard, group]) => shard.events.addBulk(group.map(noticeJob))));
    },
    async close() {
      await Promise.all(all.map((shard) => shard.scheduler.close()));
      await Promise.all(all.flatMap((shard) => [shard.events.close(), shard.deliveries.close()]));
    },
  };
}
