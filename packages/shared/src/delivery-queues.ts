/**
 * The `deliveries` queue of every shard, and routing a delivery job to its subscription's shard:
 * for the jobs added outside the account scheduler (manual retries, FIFO, re-driven, notices).
 */
import { Queue, type Job, type QueueOptions } from 'bullmq';
import type { QueueShards } from '@webhooks/publisher';
import { noteParked, type ParkedJob } from './parked-deliveries.js';
import { deliveryJob, queueNames, type DeliveryJobData } from '@webhooks/publisher';
import type { RedisConnection } from '@webhooks/publisher';

/** One round of a delivery, as {@link deliveryJob} takes it. */
export type DeliveryRound = Parameters<typeof deliveryJob>[0];

/** The delivery queues of every shard. */
export interface DeliveryQueues {
  /** By shard number. */
  all: ReadonlyArray<Queue<DeliveryJobData>>;
  /** The queue of a subscription's shard. */
  of(subscriptionId: string): Queue<DeliveryJobData>;
  /**
   * Adds `rounds`' jobs, each to its subscription's shard (one `addBulk` each); an existing job id
   * keeps its job. A delayed job is counted in its account's parked deliveries.
   * @returns the jobs, in no particular order
   * @throws BullMQ's errors when Redis cannot be reached (some shards may have taken theirs)
   */
  add(rounds: readonly DeliveryRound[], maxAttempts: number): Promise<Array<Job<DeliveryJobData>>>;
  close(): Promise<void>;
}

/** A shard's queue options but the prefix, on a producer connection that also takes the delayed jobs' notes. */
export type ShardQueueOptions = Omit<QueueOptions, 'prefix' | 'connection'> & { connection: RedisConnection };

/** Opens the `deliveries` queue of each of `shards` with `options`. */
export function createDeliveryQueues(shards: QueueShards, options: ShardQueueOptions): DeliveryQueues {
  const all = shards.prefixes.map(
    (prefix) => new Queue<DeliveryJobData>(queueNames.deliveries, { ...options, prefix }),
  );
  const of = (subscriptionId: string) => all[shards.ofSubscription(subscriptionId)]!;
  return {
    all,
    of,
    async add(rounds, maxAttempts) {
      const added = await Promise.all(
        [...shards.bySubscription(rounds)].map(async ([shard, group]) => {
          const jobs = await all[shard]!.addBulk(group.map((round) => deliveryJob(round, maxAttempts)));
          await noteDelayed(options.connection, shards.prefixes[shard]!, jobs);
          return jobs;
        }),
      );
      return added.flat();
    },
    async close() {
      await Promise.all(all.map((queue) => queue.close()));
    },
  };
}

/** Counts the delayed ones of `jobs` in their accounts' parked deliveries; best effort (they are in BullMQ). */
async function noteDelayed(
  redis: RedisConnection,
  prefix: string,
  jobs: ReadonlyArray<Job<DeliveryJobData>>,
) {
  const delayed: ParkedJob[] = jobs.flatMap((job) =>
    job.delay > 0
      ? [{ accountId: job.data.accountId, jobId: job.id!, dueAt: job.timestamp + job.delay }]
      : [],
  );
  if (delayed.length === 0) return;
  try {
    const pipeline = redis.pipeline();
    noteParked(pipeline, prefix, delayed, Date.now());
    await pipeline.exec();
  } catch {
    // Counted lower until the jobs run; nothing is lost.
  }
}
