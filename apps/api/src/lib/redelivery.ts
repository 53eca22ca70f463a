/**
 * A fresh round of attempts for failed or cancelled deliveries (a manual retry, a recovery). Redis
 * first: the round's jobs are enqueued under deterministic ids, then the rows marked `pending` in
 * that round; should the marking fail, the jobs are removed, and one left behind is dropped by the
 * worker (its row is in another round). No row is ever `pending` without a job, and with Redis down
 * nothing changes (the caller answers 503).
 */
import type { PrismaClient } from '@webhooks/db';
import {
  defaultPublishTimeoutMs,
  deliveryJobId,
  nextRound,
  withRedisTimeout,
  type DeliveryQueues,
} from '@webhooks/shared';

/**
 * A delivery that may start a new round: its key, the attempts it made so far, and how long its
 * round waits before it is sent (ms; a recovery's pace, none when absent).
 */
export interface RedeliveryCandidate {
  id: string;
  eventId: string;
  subscriptionId: string;
  attemptsMade: number;
  delayMs?: number;
}

/** What a new round needs. */
export interface RedeliveryDeps {
  prisma: PrismaClient;
  /** Each subscription's `deliveries` queue, on its shard. */
  queues: DeliveryQueues;
  /** Attempts of the round (DELIVERY_MAX_ATTEMPTS). */
  maxAttempts: number;
}

/**
 * Starts a new round for each of `candidates` still failed or cancelled with `attempts_made` as
 * read (two concurrent requests start one round). `recovered`: the jobs wait behind every admitted
 * delivery (`recoveryPriority`).
 *
 * @returns the ids of the deliveries now pending in their new round
 * @throws PublishUnavailableError when Redis does not take the jobs within 2 s, Prisma's errors
 *   when PostgreSQL fails (infrastructure faults, answered 503); no row is left changed
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
    // A job whose row was not marked stays: a concurrent request marked that same round (one job
    // for both), or the worker drops it, finding the row in another round.
    return rows.map((row) => row.id);
  } catch (error) {
    await removeJobs(deps.queues, rounds);
    throw error;
  }
}

/**
 * Removes the jobs of rounds that could not be marked. Best effort: a job left behind is dropped
 * by the worker when it finds its row in another round.
 */
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
