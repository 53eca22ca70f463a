/**
 * The BullMQ queues shared by the API, the worker and internal publishers, and their job data.
 * `QueueJobs` maps each queue to its data type, so a typed producer cannot put the wrong data on one.
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

/** One event to one subscription: the row's two ids and small counters, so queued jobs stay small. */
export interface DeliveryJobData {
  eventId: string;
  subscriptionId: string;
  /** The delivery's round this job runs (the row's `round`); 0, the first, when absent. */
  round?: number;
  /** The event's {@link EventJobData.requestId}, when it had one: logged with every attempt. */
  requestId?: string;
  /** The subscription's account: whose turn it asks, and whose parked count it joins while delayed. */
  accountId: string;
  /** Attempts made before the job existed (the inline first attempt), taken off its BullMQ `attempts`. */
  inlineAttempts?: number;
}

/** Added to a job put back after a PostgreSQL or Redis fault: how often, so that the wait grows. */
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

export type QueueName = keyof QueueJobs;

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

/** The delivery jobs' backoff strategy, registered by the worker: exponential, stretched by `Retry-After`. */
export const deliveryBackoffType = 'delivery';

/** A delivery's BullMQ job id, joined with `.` (BullMQ refuses one `:`), `.r<round>` after round 0. */
export function deliveryJobId(eventId: string, subscriptionId: string, round = 0): string {
  return round === 0 ? `${eventId}.${subscriptionId}` : `${eventId}.${subscriptionId}.r${round}`;
}

/** The subscription of a delivery job id ({@link deliveryJobId}); null for an id of another shape. */
export function subscriptionOfDeliveryJob(jobId: string): string | null {
  const [eventId, subscriptionId, round, ...rest] = jobId.split('.');
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (rest.length > 0 || eventId === undefined || subscriptionId === undefined) return null;
  if (!uuid.test(eventId) || !uuid.test(subscriptionId)) return null;
  if (round !== undefined && !/^r\d+$/.test(round)) return null;
  return subscriptionId;
}

/** How long finished jobs stay in Redis (age in s, or count): for operators; PostgreSQL keeps the log. */
export const finishedJobRetention = {
  completed: { age: 3600, count: 1000 },
  failed: { age: 7 * 24 * 3600, count: 10_000 },
} as const;

/**
 * Options of every fan-out job. PostgreSQL and Redis faults spend no attempts; the reconciler retries
 * the rest. A completed one is dropped: PostgreSQL holds the event, and a rerun adds no delivery twice.
 */
export const eventJobOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: finishedJobRetention.failed,
} as const satisfies JobsOptions;

/** A fan-out job's name: `event:` and 16 hex digits of the account's SHA-256. */
export type EventJobName = `event:${string}`;

/**
 * The name of `accountId`'s fan-out jobs, so the FIFO watch tells whose a queued event is without
 * reading its data. A 64-bit digest: a collision only makes a FIFO head wait for the other's fan-out.
 */
export function eventJobName(accountId: string): EventJobName {
  return `event:${createHash('sha256').update(accountId).digest('hex').slice(0, 16)}`;
}

/** The fan-out job of event `data`, under its id and its account's name, for `Queue.addBulk`. */
export function eventJob(data: EventJobData): { name: EventJobName; data: EventJobData; opts: JobsOptions } {
  return { name: eventJobName(data.accountId), data, opts: { ...eventJobOptions, jobId: data.id } };
}

/**
 * The fan-out job of an operational notice (`subscription.disabled`, …), kept once completed, so the
 * reconciler tells a notice fanned out to nobody from one never fanned out.
 */
export function noticeJob(data: EventJobData): ReturnType<typeof eventJob> {
  const job = eventJob(data);
  return { ...job, opts: { ...job.opts, removeOnComplete: finishedJobRetention.completed } };
}

/** The round a manual retry or recovery starts: one past `attemptsMade`, so two requests name one round. */
export function nextRound(attemptsMade: number): number {
  return attemptsMade + 1;
}

/** Attempts the delivery made before `round` started (0 for the first round). */
export function attemptsBeforeRound(round: number): number {
  return Math.max(0, round - 1);
}

/** Options of a delivery job of `maxAttempts` (DELIVERY_MAX_ATTEMPTS); completed jobs are dropped. */
export function deliveryJobOptions(maxAttempts: number, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: maxAttempts,
    backoff: { type: deliveryBackoffType },
    removeOnComplete: true,
    removeOnFail: finishedJobRetention.failed,
  };
}

/** The back lane's priority: BullMQ takes unprioritized jobs (the front lane) first; a retry keeps it. */
export const backLanePriority = 1;

/** Priority of recovered rounds, behind the back lane: not admitted yet, they ask their turn when run. */
export const recoveryPriority = 2;

/** One round of a delivery: `recovered` queues it behind admitted ones, `delayMs` delays it that long. */
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
 * The job that sends `subscriptionId`'s callback its challenge, with BullMQ's exponential backoff.
 * Its deduplication id adds none while one for the same subscription and URL waits or runs.
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
