/**
 * Putting a job back unspent when PostgreSQL or Redis failed around it: `moveToDelayed` +
 * `DelayedError` (not an attempt to BullMQ), for a wait doubling from 1 s up to a minute, so an
 * outage costs a waiting job one round trip a minute.
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
 * Puts `job` back for {@link deferralDelayMs}, counting the deferral; `token` is its lock token.
 * @throws DelayedError always, for the processor to throw: BullMQ then leaves the job delayed
 * @throws Redis errors when Redis itself is down; BullMQ's stalled-job check then gives the job back
 */
export async function deferJob(job: Job, token: string | undefined): Promise<never> {
  const deferrals = (job.data as Deferrable).deferrals ?? 0;
  await job.updateData({ ...(job.data as object), deferrals: deferrals + 1 });
  await job.moveToDelayed(Date.now() + deferralDelayMs(deferrals), token);
  throw new DelayedError();
}
