/**
 * The BullMQ queues shared by the API, the worker and internal publishers, and the job data each
 * carries. `QueueJobs` is the single map of queue name to job data type: a producer or a worker
 * typed with it cannot put the wrong data on a queue.
 */
import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';

/** An event accepted for delivery, as it travels from a publisher to the fan-out processor. */
export interface EventJobData {
  /** Event id, a UUIDv7; also the BullMQ job id and the `webhook-id` header of every delivery. */
  id: string;
  accountId: string;
  /** An event type of the catalogue, `<resource>.<action>`. */
  type: string;
  /** The event's own content, a JSON object (at most 256 KiB serialized). */
  data: Record<string, unknown>;
  /** When the event occurred: the payload's `timestamp`, UTC, ISO 8601 without zone designator. */
  timestamp: string;
  /** The `X-Request-Id` of the API request that published it, for the worker's log lines. */
  requestId?: string;
  /** A test event's only subscription; absent: every matching subscription of the account. */
  subscriptionId?: string;
}

/**
 * One delivery: one event to one subscription. Kept to the two ids that address the delivery row
 * (unique on event and subscription) and two small counters, so a million queued deliveries stay
 * small in Redis.
 */
export interface DeliveryJobData {
  eventId: string;
  subscriptionId: string;
  /** The delivery's round this job runs (the row's `round`); 0, the first, when absent. */
  round?: number;
  /** The event's {@link EventJobData.requestId}, when it had one: logged with every attempt. */
  requestId?: string;
  /**
   * The subscription's account: its turn is that account's, and while the job waits in BullMQ's
   * delayed set (a retry's backoff, a gate or host cap) it counts as that account's parked delivery.
   */
  accountId: string;
  /**
   * Attempts of this round made before the job existed (the fan-out's inline first attempt): its
   * BullMQ `attempts` are that many fewer, so that the round's total stays DELIVERY_MAX_ATTEMPTS.
   */
  inlineAttempts?: number;
}

/**
 * What the worker adds to a job it puts back because PostgreSQL or Redis failed around it: how many times it did, so that the wait grows.
 */
export interface Deferrable {
  deferrals?: number;
}

/** A subscription whose callback must answer a signed challenge before it receives events. */
export interface VerificationJobData {
  subscriptionId: string;
}

/** Job data of the `maintenance` queue: which scheduled task to run. */
export interface MaintenanceJobData {
  task: 'reconcile' | 'retention';
}

/** Queue name to job data. */
export interface QueueJobs {
  events: EventJobData & Deferrable;
  deliveries: DeliveryJobData & Deferrable;
  maintenance: MaintenanceJobData;
  verifications: VerificationJobData;
}

/** The name of a queue of `QueueJobs`. */
export type QueueName = keyof QueueJobs;

/** Queue names as values. */
export const queueNames = {
  events: 'events',
  deliveries: 'deliveries',
  maintenance: 'maintenance',
  verifications: 'verifications',
} as const satisfies {
  [K in QueueName]: K;
};

/** Redis key prefix of the queues unless QUEUE_PREFIX says otherwise (tests use their own). */
export const defaultQueuePrefix = 'webhooks';

/**
 * Name of the delivery jobs' backoff strategy. The worker registers the function behind it
 * (`settings.backoffStrategy`), so that producers (the fan-out, the API's manual retry) need to
 * know nothing of waits: exponential from DELIVERY_BACKOFF_MS, stretched by a callback's
 * `Retry-After`.
 */
export const deliveryBackoffType = 'delivery';

/**
 * The BullMQ job id of a delivery. BullMQ refuses custom ids with one `:` (Redis key separator),
 * so the two ids are joined with `.`; `round` > 0 marks a manual retry round.
 */
export function deliveryJobId(eventId: string, subscriptionId: string, round = 0): string {
  return round === 0 ? `${eventId}.${subscriptionId}` : `${eventId}.${subscriptionId}.r${round}`;
}

/**
 * The subscription of a delivery job id ({@link deliveryJobId}), which names its queue shard; null
 * for an id of another shape.
 */
export function subscriptionOfDeliveryJob(jobId: string): string | null {
  const [eventId, subscriptionId, round, ...rest] = jobId.split('.');
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (rest.length > 0 || eventId === undefined || subscriptionId === undefined) return null;
  if (!uuid.test(eventId) || !uuid.test(subscriptionId)) return null;
  if (round !== undefined && !/^r\d+$/.test(round)) return null;
  return subscriptionId;
}

/**
 * How long finished jobs stay in Redis, on every queue: by age in seconds
 * and by count, whichever is reached first. PostgreSQL keeps the delivery log; these are only for
 * operators looking at the queues.
 */
export const finishedJobRetention = {
  completed: { age: 3600, count: 1000 },
  failed: { age: 7 * 24 * 3600, count: 10_000 },
} as const;

/**
 * The options of every fan-out job, whoever publishes it (the publisher, the worker's
 * `subscription.disabled` notices): the fan-out waits out PostgreSQL and Redis faults without
 * using attempts; these are for anything else, and the reconciler retries a fan-out that still
 * fails.
 */
export const eventJobOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: finishedJobRetention.completed,
  removeOnFail: finishedJobRetention.failed,
} as const satisfies JobsOptions;

/** A fan-out job's name: `event:` and 16 hex digits of the account's SHA-256. */
export type EventJobName = `event:${string}`;

/**
 * The name of account `accountId`'s fan-out jobs. It tells the FIFO watch whose a queued event is
 * from its short name alone, without reading the event's data (up to the payload limit) of every
 * account's earlier jobs. A digest keeps it short whatever the account id; two accounts sharing
 * one (a 64-bit collision) would only make a FIFO head wait for the other's fan-out.
 */
export function eventJobName(accountId: string): EventJobName {
  return `event:${createHash('sha256').update(accountId).digest('hex').slice(0, 16)}`;
}

/** The fan-out job of event `data`, under its id and its account's name, for `Queue.addBulk`. */
export function eventJob(data: EventJobData): { name: EventJobName; data: EventJobData; opts: JobsOptions } {
  return { name: eventJobName(data.accountId), data, opts: { ...eventJobOptions, jobId: data.id } };
}

/**
 * The round a manual retry or a recovery starts, after `attemptsMade` attempts in all: one past
 * them, so its job id ({@link deliveryJobId}) is new, and two concurrent requests name one round.
 */
export function nextRound(attemptsMade: number): number {
  return attemptsMade + 1;
}

/** Attempts the delivery made before `round` started (0 for the first round). */
export function attemptsBeforeRound(round: number): number {
  return Math.max(0, round - 1);
}

/**
 * Job options of a delivery job with `maxAttempts` attempts in all (DELIVERY_MAX_ATTEMPTS):
 * completed jobs are dropped (the delivery log has them), failed ones bounded as
 * {@link finishedJobRetention} says.
 */
export function deliveryJobOptions(maxAttempts: number, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: maxAttempts,
    backoff: { type: deliveryBackoffType },
    removeOnComplete: true,
    removeOnFail: finishedJobRetention.failed,
  };
}

/**
 * The BullMQ priority of the `deliveries` queue's back lane: a backlogged account's admitted
 * deliveries. BullMQ's workers take the wait list (jobs without a priority, the front lane: quiet
 * accounts' deliveries) before the prioritized set, lower priorities first, and a job keeps its
 * priority through its retries and waits, so it keeps its lane.
 */
export const backLanePriority = 1;

/**
 * The BullMQ priority of recovered rounds, behind the back lane: they are not admitted yet (each
 * asks its account's turn when it runs), so the account scheduler's admission room does not count
 * them, and a recovery of thousands leaves the other accounts' admissions alone.
 */
export const recoveryPriority = 2;

/**
 * The job of one round of a delivery: its deterministic id ({@link deliveryJobId}) and options,
 * for `Queue.add` or `addBulk`; `recovered` puts it behind every admitted delivery
 * ({@link recoveryPriority}), and `delayMs` (ms, for a recovery's pace) keeps it in BullMQ's
 * delayed set that long first.
 */
export function deliveryJob(
  delivery: {
    eventId: string;
    subscriptionId: string;
    accountId: string;
    round: number;
    requestId?: string;
    recovered?: boolean;
    delayMs?: number;
  },
  maxAttempts: number,
): { name: 'delivery'; data: DeliveryJobData; opts: JobsOptions } {
  const { eventId, subscriptionId, accountId, round, requestId, recovered, delayMs } = delivery;
  return {
    name: 'delivery',
    data: {
      eventId,
      subscriptionId,
      accountId,
      ...(round === 0 ? {} : { round }),
      ...(requestId === undefined ? {} : { requestId }),
    },
    opts: {
      ...deliveryJobOptions(maxAttempts, deliveryJobId(eventId, subscriptionId, round)),
      ...(recovered === true ? { priority: recoveryPriority } : {}),
      ...(delayMs !== undefined && delayMs > 0 ? { delay: delayMs } : {}),
    },
  };
}

/** Tries of a callback verification, and the wait after the first failed one in ms (doubling). */
export const verificationRetry = { attempts: 5, firstWaitMs: 10_000 } as const;

/**
 * The job that sends `subscriptionId`'s callback at `callbackUrl` its challenge
 * (CALLBACK_VERIFICATION=challenge), retried by BullMQ's built-in exponential backoff
 * ({@link verificationRetry}). While one for the same subscription and URL is waiting, retrying or
 * running, another is not added (BullMQ's deduplication), so asking again and again sends no more
 * challenges than asking once; once it ended, asking again adds one.
 */
export function verificationJob(
  subscriptionId: string,
  callbackUrl: string,
): {
  name: 'verification';
  data: VerificationJobData;
  opts: JobsOptions;
} {
  const url = createHash('sha256').update(callbackUrl).digest('hex').slice(0, 32);
  return {
    name: 'verification',
    data: { subscriptionId },
    opts: {
      deduplication: { id: `verification:${subscriptionId}:${url}` },
      attempts: verificationRetry.attempts,
      backoff: { type: 'exponential', delay: verificationRetry.firstWaitMs },
      removeOnComplete: finishedJobRetention.completed,
      removeOnFail: finishedJobRetention.failed,
    },
  };
}
