/**
 * One attempt at a time per delivery round: a step claims its round's job id in Redis before it
 * reads the delivery, and drops the claim once the attempt is recorded. Two runs of one round can
 * otherwise overlap without any fault: an inline attempt still in flight when its admission's
 * lease ends and the round is admitted again as a job, a fan-out run again by a stalled job, or a
 * job BullMQ takes as stalled while a worker whose event loop is saturated still runs it. Both
 * would read the delivery as pending and send it, and the callback would get the same
 * `webhook-id` twice. The second run finds the claim and waits instead; when it comes back, the
 * first has recorded its attempt, and the second ends as `not_pending` or continues the round.
 *
 * A claim is a lease (`SET NX PX`, https://redis.io/docs/latest/commands/set/): a worker killed
 * mid-attempt cannot keep one past `leaseMs`, and at-least-once delivery resumes then.
 */
import type { Logger } from 'pino';
import type { RedisConnection } from '@webhooks/shared';

/** Claims of one queue shard's rounds. */
export interface AttemptClaims {
  /**
   * Claims `jobId`'s round for this step. @returns false when another run holds it
   * @throws ioredis' errors when Redis cannot be reached
   */
  take(jobId: string): Promise<boolean>;
  /** Drops this step's claim. Never throws: a claim Redis did not drop ends with its lease. */
  drop(jobId: string): Promise<void>;
}

/**
 * How long a run that found its round claimed waits before it asks again, in ms: about an
 * attempt's usual length, never an attempt used.
 */
export const claimedWaitMs = 1_000;

/**
 * Creates the claims under `prefix` (the shard's queue prefix, so that on a Cluster they share the
 * shard's hash slot), each a lease of `leaseMs` (longer than the longest attempt).
 */
export function createAttemptClaims(options: {
  redis: RedisConnection;
  prefix: string;
  leaseMs: number;
  log: Logger;
}): AttemptClaims {
  const { redis, prefix, leaseMs, log } = options;
  const key = (jobId: string) => `${prefix}:claim:${jobId}`;
  return {
    async take(jobId) {
      return (await redis.set(key(jobId), '1', 'PX', leaseMs, 'NX')) === 'OK';
    },
    async drop(jobId) {
      try {
        await redis.del(key(jobId));
      } catch (error) {
        log.debug({ err: error, jobId }, 'attempt claim not dropped; its lease ends it');
      }
    },
  };
}
