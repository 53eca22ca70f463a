/**
 * Putting a job back, without using one of its attempts, when PostgreSQL or Redis failed around
 * it. The job goes to BullMQ's delayed set
 * (`moveToDelayed` + `DelayedError`, which BullMQ does not count as an attempt) for a wait that
 * doubles from 1 s with each deferral of the same job, capped at 1 minute, so an outage of any
 * length costs a waiting job one Redis round trip a minute.
 */
import { DelayedError, type Job } from 'bullmq';
import type { Deferrable } from '@webhooks/shared';

/** Wait after the first deferral, in ms. */
export const firstDeferralMs = 1_000;

/** Longest wait between two tries of a deferred job, in ms ("capped at 1 minute"). */
export const maxDeferralMs = 60_000;

/** The wait in ms before the next try of a job already deferred `deferrals` times (0 for the first). */
export function deferralDelayMs(deferrals: number): number {
  return Math.min(maxDeferralMs, firstDeferralMs * 2 ** Math.min(deferrals, 16));
}

/**
 * Puts `job` back for {@link deferralDelayMs} and counts the deferral in its data.
 *
 * @param token the job's lock token (the processor's second argument)
 * @throws DelayedError always, for the processor to throw on: BullMQ then leaves the job delayed
 * @throws Redis errors when Redis itself is down; BullMQ's stalled-job check then gives the job back
 */
export async function deferJob(job: Job, token: string | undefined): Promise<never> {
  const deferrals = (job.data as Deferrable).deferrals ?? 0;
  await job.updateData({ ...(job.data as object), deferrals: deferrals + 1 });
  await job.moveToDelayed(Date.now() + deferralDelayMs(deferrals), token);
  throw new DelayedError();
}
