/**
 * One run of a delivery round at a time: a fenced lease (`SET NX PX`) on the round's job id, taken before
 * the read and dropped once the attempt is recorded, so overlapping runs (an expired admission, a rerun
 * fan-out, a stalled job) cannot both send it. The gate's scripts take it with the slot.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RedisConnection } from '@webhooks/shared';
import { defineFencedDelete, renewalDue } from './lease.js';

/** A claim taken ahead of its step: the hand-over claims the next head while the current one is attempted. */
export interface ClaimAhead {
  jobId: string;
  /** Renews it a full lease (rejects with ioredis' errors); null once due (`lease.ts`): it may be ending, so drop it. */
  keep(): Promise<void> | null;
  /** Drops it once, unless its lease passed; after {@link keep} renewed it, the step drops it instead. Never throws. */
  drop(): Promise<void>;
}

/** Claims of one queue shard's rounds. */
export interface AttemptClaims {
  /** Claims `jobId`'s round; false when another run holds it. @throws ioredis' errors */
  take(jobId: string): Promise<boolean>;
  /** Drops this step's claim. Never throws: a claim Redis did not drop ends with its lease. */
  drop(jobId: string): Promise<void>;
  /** {@link take} for a step that starts later; null when another run holds it. @throws ioredis' errors */
  takeAhead(jobId: string): Promise<ClaimAhead | null>;
}

/** How long a run finding its round claimed waits before asking again (ms): about an attempt; none is used. */
export const claimedWaitMs = 1_000;

/** The key of `jobId`'s claim under `prefix`, the shard's queue prefix (its hash slot on a Cluster). */
export function claimKey(prefix: string, jobId: string): string {
  return `${prefix}:claim:${jobId}`;
}

/** The claims under the shard's `prefix` (its Cluster slot), each a lease of `leaseMs` (past the longest attempt). */
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
