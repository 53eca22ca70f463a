/**
 * The one module that knows BullMQ's private Redis layout, for reads its API has no cheap form
 * of: queue lengths per shard (the backlog bound), the oldest waiting, delayed and active ids (the
 * FIFO watch), a job's hash and failed-set membership (the reconciler), a job's `data` field, and
 * what the scheduler's script measures. BullMQ is pinned to 6.7.0 for it, and
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
  /**
   * The hash of job `id`; its {@link jobDataField} holds the job's data as JSON, its
   * {@link jobNameField} its name.
   */
  job(id: string): string;
}

/** The field of a job's hash that holds its data, as JSON. */
export const jobDataField = 'data';

/** The field of a job's hash that holds its name. */
export const jobNameField = 'name';

/**
 * The scores of the prioritized set's jobs of BullMQ priority `priority`, `[min, max]` inclusive:
 * BullMQ 6.7 scores a prioritized job `priority × 2^32 + a counter` (its `getPriorityScore`
 * script), so a `ZCOUNT` over this range counts one priority's jobs.
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
