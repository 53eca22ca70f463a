/**
 * One run of a delivery round at a time: a claim on the round's job id, taken before the delivery
 * is read and dropped once its attempt is recorded, so that two runs that overlap without a fault
 * (an inline attempt whose admission's lease ended, a fan-out run again, a job taken as stalled)
 * cannot both send it. The gate's scripts take and drop it with the subscription's slot
 * (`gate-scripts.ts`); steps that skip the gate (an ordered hand-over's heads, an expiry) use this
 * module. A claim is a lease (`SET NX PX`, https://redis.io/docs/latest/commands/set/) holding its
 * taker's token, dropped only by that taker (`defineFencedDelete`).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RedisConnection } from '@webhooks/shared';
import { defineFencedDelete, renewalDue } from './lease.js';

/**
 * A claim taken ahead of the step that will use it (`AttemptClaims.takeAhead`): the ordered
 * hand-over (`in-order.ts`) claims the next head while the one before it is attempted.
 */
export interface ClaimAhead {
  jobId: string;
  /**
   * Holds the claim a full lease again, for the step about to use it, which need not wait: at least
   * two thirds of its lease are left. @returns the renewal under way (rejected with ioredis'
   * errors), or null, renewing nothing, when it was due for renewal (`lease.ts`: a third of its
   * lease passed since it was taken): it may then be about to end, and another run to take it; the
   * caller drops it.
   */
  keep(): Promise<void> | null;
  /**
   * Drops it, once, and unless its lease has passed (the key may then be another run's); after
   * {@link keep} gave a renewal, the step using it drops it instead. Never throws.
   */
  drop(): Promise<void>;
}

/** Claims of one queue shard's rounds. */
export interface AttemptClaims {
  /**
   * Claims `jobId`'s round for this step. @returns false when another run holds it
   * @throws ioredis' errors when Redis cannot be reached
   */
  take(jobId: string): Promise<boolean>;
  /** Drops this step's claim. Never throws: a claim Redis did not drop ends with its lease. */
  drop(jobId: string): Promise<void>;
  /**
   * Claims `jobId`'s round as {@link take} does, for a step that starts later.
   * @returns null when another run holds it @throws ioredis' errors
   */
  takeAhead(jobId: string): Promise<ClaimAhead | null>;
}

/**
 * How long a run that found its round claimed waits before it asks again, in ms: about an
 * attempt's usual length, never an attempt used.
 */
export const claimedWaitMs = 1_000;

/** The key of `jobId`'s claim under `prefix`, the shard's queue prefix (its hash slot on a Cluster). */
export function claimKey(prefix: string, jobId: string): string {
  return `${prefix}:claim:${jobId}`;
}

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
  const key = (jobId: string) => claimKey(prefix, jobId);
  const release = defineFencedDelete(redis);
  /** The token of each claim this process holds, by job id: a drop deletes only its own claim. */
  const tokens = new Map<string, string>();
  const take = async (jobId: string) => {
    const token = randomUUID();
    const taken = (await redis.set(key(jobId), token, 'PX', leaseMs, 'NX')) === 'OK';
    if (taken) tokens.set(jobId, token);
    return taken;
  };
  const drop = async (jobId: string) => {
    const token = tokens.get(jobId);
    tokens.delete(jobId);
    if (token === undefined) return;
    try {
      await release({ key: key(jobId) }, { token });
    } catch (error) {
      log.debug({ err: error, jobId }, 'attempt claim not dropped; its lease ends it');
    }
  };
  return {
    take,
    drop,
    async takeAhead(jobId) {
      if (!(await take(jobId))) return null;
      const takenAt = Date.now();
      let held = true;
      const ahead: ClaimAhead = {
        jobId,
        keep() {
          if (renewalDue(takenAt, Date.now(), leaseMs)) return null;
          return redis.pexpire(key(jobId), leaseMs).then(() => undefined);
        },
        async drop() {
          if (!held) return;
          held = false;
          if (Date.now() - takenAt < leaseMs) await drop(jobId);
          else tokens.delete(jobId);
        },
      };
      return ahead;
    },
  };
}
