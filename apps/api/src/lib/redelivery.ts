/**
 * A fresh round of attempts for failed or cancelled deliveries (manual retry, recovery). Redis
 * first: jobs under deterministic ids, then rows marked `pending`; if marking fails the jobs are
 * removed (one left behind is dropped by the worker). No row is `pending` without a job.
 */
import type { PrismaClient } from '@webhooks/db';
import {
  defaultPublishTimeoutMs,
  deliveryJobId,
  nextRound,
  withRedisTimeout,
  type DeliveryQueues,
} from '@webhooks/shared';

/** A delivery that may start a new round: its key, attempts so far, and its round's wait (ms; a recovery's pace). */
export interface RedeliveryCandidate {
  id: string;
  eventId: string;
  subscriptionId: string;
  attemptsMade: number;
  delayMs?: number;
}

export interface RedeliveryDeps {
  prisma: PrismaClient;
  /** Each subscription's `deliveries` queue, on its shard. */
  queues: DeliveryQueues;
  /** Attempts of the round (DELIVERY_MAX_ATTEMPTS). */
  maxAttempts: number;
}

/**
 * Starts a round for each candidate still failed or cancelled with `attempts_made` as read (two
 * concurrent requests start one). `recovered`: behind every admitted delivery (`recoveryPriority`).
 * @returns the ids of the deliveries now pending in their new round
 * @throws PublishUnavailableError when Redis does not take the jobs within 2 s, Prisma's errors when
 *   PostgreSQL fails (both answered 503); no row is left changed
 */
export async function startRounds(
  deps: RedeliveryDeps,
  accountId: string,
  candidates: RedeliveryCandidate[],
  options: { recovered: boolean },
): Promise<string[]> {
  if (candidates.length === 0) return [];
  const rounds = candidates.map((c) => ({
    ...c,
    accountId,
    round: nextRound(c.attemptsMade),
    recovered: options.recovered,
  }));
  await withRedisTimeout(
    deps.queues.add(rounds, deps.maxAttempts),
    defaultPublishTimeoutMs,
    'the redelivery',
  );
  try {
    const rows = await deps.prisma.$queryRaw<Array<{ id: string }>>`
      UPDATE deliveries d
      SET status = 'pending', round = r.round, next_attempt_at = now(), updated_at = now()
      FROM unnest(${rounds.map((r) => r.id)}::uuid[], ${rounds.map((r) => r.attemptsMade)}::int[],
                  ${rounds.map((r) => r.round)}::int[]) AS r(id, attempts_made, round)
      WHERE d.id = r.id AND d.attempts_made = r.attempts_made AND d.status IN ('failed', 'cancelled')
      RETURNING d.id::text`;
    // A job whose row was not marked stays: a concurrent request's round, or the worker drops it.
    return rows.map((row) => row.id);
  } catch (error) {
    await removeJobs(deps.queues, rounds);
    throw error;
  }
}

/** Removes the jobs of rounds that could not be marked; best effort (the worker drops one left behind). */
async function removeJobs(
  queues: DeliveryQueues,
  rounds: Array<{ eventId: string; subscriptionId: string; round: number }>,
): Promise<void> {
  await Promise.allSettled(
    rounds.map((r) =>
      queues.of(r.subscriptionId).remove(deliveryJobId(r.eventId, r.subscriptionId, r.round)),
    ),
  );
}
