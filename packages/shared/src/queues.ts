/**
 * The BullMQ queues shared by the API, the worker and internal publishers, and the job data each
 * carries. `QueueJobs` is the single map of queue name to job data type: a producer or a worker
 * typed with it cannot put the wrong data on a queue.
 */
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
}

/**
 * One delivery: one event to one subscription. Kept to the two ids that address the delivery row
 * (unique on event and subscription), so a million queued deliveries stay small in Redis.
 */
export interface DeliveryJobData {
  eventId: string;
  subscriptionId: string;
}

/** Queue name to job data. */
export interface QueueJobs {
  events: EventJobData;
  deliveries: DeliveryJobData;
}

/** The name of a queue of `QueueJobs`. */
export type QueueName = keyof QueueJobs;

/** Queue names as values. */
export const queueNames = { events: 'events', deliveries: 'deliveries' } as const satisfies {
  [K in QueueName]: K;
};

/** Redis key prefix of the queues unless QUEUE_PREFIX says otherwise (tests use their own). */
export const defaultQueuePrefix = 'webhooks';

/**
 * Name of the delivery jobs' backoff strategy. The worker registers the function behind it
 * (`settings.backoffStrategy`), so that producers (the fan-out, the API's manual retry) need to
 * know nothing of waits: exponential from DELIVERY_BACKOFF_MS, stretched by a callback's
 * `Retry-After` (issue #8).
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
 * Job options of a delivery job with `maxAttempts` attempts in all (DELIVERY_MAX_ATTEMPTS);
 * completed jobs are dropped, failed ones kept an hour.
 */
export function deliveryJobOptions(maxAttempts: number, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: maxAttempts,
    backoff: { type: deliveryBackoffType },
    removeOnComplete: true,
    removeOnFail: { age: 3600 },
  };
}
