/**
 * Counting an account's parked deliveries (`noteParked`): a job left in a shard's delayed set (a
 * backoff, gate, rate limit, host or FIFO wait) is noted in its account's count, which the API's
 * backlog bound reads. One waiting in its account's turn list is counted there already.
 */
import type { Logger } from 'pino';
import { noteParked, type RedisConnection } from '@webhooks/shared';
import type { DeliveryStep } from './step.js';

/** When `step`'s job is due again (ms since the epoch; `now` the step's end), or null when not parked. */
export function parkedUntil(step: DeliveryStep, now: number): number | null {
  if (step.kind === 'wait') return step.inTurnList === true ? null : now + step.waitMs;
  if (step.kind === 'attempted' && step.outcome.kind === 'retry') return step.outcome.nextAttemptAt.getTime();
  return null;
}

/** Notes the parked deliveries of one queue shard. */
export interface ParkedDeliveries {
  /** Notes `accountId`'s `jobId` waiting until `dueAt` (ms), dropping past entries; never throws (a lost note undercounts). */
  park(accountId: string, jobId: string, dueAt: number): Promise<void>;
}

export interface ParkedDeliveriesOptions {
  redis: RedisConnection;
  /** The shard's effective key prefix. */
  prefix: string;
  log: Logger;
}

/** Creates one shard's notes (`noteParked`): one pipeline per parked job, in the shard's slot. */
export function createParkedDeliveries(options: ParkedDeliveriesOptions): ParkedDeliveries {
  const { redis, prefix, log } = options;
  return {
    async park(accountId, jobId, dueAt) {
      try {
        const pipeline = redis.pipeline();
        noteParked(pipeline, prefix, [{ accountId, jobId, dueAt }], Date.now());
        await pipeline.exec();
      } catch (error) {
        log.debug({ err: error, jobId }, 'parked delivery not counted');
      }
    },
  };
}
