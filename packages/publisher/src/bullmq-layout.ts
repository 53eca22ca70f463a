/**
 * The one module that knows BullMQ's private Redis layout, for reads its API has no cheap form of
 * (queue lengths, the oldest ids, a job's hash and data). BullMQ is pinned to 6.7.0 for it, and
 * `bullmq-layout.test.ts` checks each key against a real queue.
 */

/** A queue's keys under its key prefix (`<prefix>:<queue>:<part>`), and each one's Redis type. */
export interface QueueLayout {
  /** List of waiting job ids (no priority), the oldest at its right end: workers take it first. */
  wait: string;
  /** Sorted set of waiting prioritized job ids, taken after the wait list. */
  prioritized: string;
  /** Sorted set of delayed job ids, scored by when they are due. */
  delayed: string;
  /** List of the job ids being processed. */
  active: string;
  /** Sorted set of failed job ids, kept per `removeOnFail`. */
  failed: string;
  /** The queue's metadata hash (what `WAIT` after a write covers). */
  meta: string;
  /** The hash of job `id`: {@link jobDataField} holds its data as JSON, {@link jobNameField} its name. */
  job(id: string): string;
}

/** The field of a job's hash that holds its data, as JSON. */
export const jobDataField = 'data';

/** The field of a job's hash that holds its name. */
export const jobNameField = 'name';

/**
 * The prioritized set's score range `[min, max]` of `priority`: BullMQ 6.7 scores a job
 * `priority × 2^32 + a counter` (`getPriorityScore`), so a `ZCOUNT` over it counts one priority.
 */
export function prioritizedScores(priority: number): [min: number, max: number] {
  return [priority * 2 ** 32, (priority + 1) * 2 ** 32 - 1];
}

/** The layout of queue `name` under the effective key prefix `prefix` (QUEUE_PREFIX, or a shard's). */
export function queueLayout(prefix: string, name: string): QueueLayout {
  return layoutOf({ qualifiedName: `${prefix}:${name}` });
}

/** The layout of a BullMQ `Queue` (its `qualifiedName` is `<prefix>:<name>`). */
export function layoutOf(queue: { qualifiedName: string }): QueueLayout {
  const key = (part: string) => `${queue.qualifiedName}:${part}`;
  return {
    wait: key('wait'),
    prioritized: key('prioritized'),
    delayed: key('delayed'),
    active: key('active'),
    failed: key('failed'),
    meta: key('meta'),
    job: key,
  };
}
