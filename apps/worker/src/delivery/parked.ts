/**
 * The worker's part of counting each account's parked deliveries (`noteParked` in the shared
 * package): when a step leaves its job in a shard's delayed set (a retry's backoff; a gate, rate
 * limit, host cap or FIFO wait), the job is noted in its account's count, so that the API's backlog
 * bound counts it in the account's share (`apps/api/src/lib/backlog.ts`). A job waiting for its
 * account's turn is in its account's list already and is not counted twice.
 */
import type { Logger } from 'pino';
import { noteParked, type RedisConnection } from '@webhooks/shared';
import type { DeliveryStep } from './step.js';

/**
 * When the job of a step that came to `step` is due again, in ms since the epoch, or null when it
 * is not parked: the round ended, the attempt confirmed or gave up, or the job waits in its
 * account's turn list.
 *
 * @param now the time the step ended, in ms since the epoch
 */
export function parkedUntil(step: DeliveryStep, now: number): number | null {
  if (step.kind === 'wait') return step.inTurnList === true ? null : now + step.waitMs;
  if (step.kind === 'attempted' && step.outcome.kind === 'retry') return step.outcome.nextAttemptAt.getTime();
  return null;
}

/** Notes the parked deliveries of one queue shard. */
export interface ParkedDeliveries {
  /**
   * Notes that `accountId`'s job `jobId` waits until `dueAt` (ms since the epoch), and drops the
   * account's entries already past their time. Never throws: a note Redis did not take is logged,
   * and only leaves the count lower until the next one.
   */
  park(accountId: string, jobId: string, dueAt: number): Promise<void>;
}

/** Options of {@link createParkedDeliveries}. */
export interface ParkedDeliveriesOptions {
  redis: RedisConnection;
  /** The shard's effective key prefix. */
  prefix: string;
  log: Logger;
}

/**
 * Creates the notes of one shard (`noteParked`): per parked job, one pipeline in the shard's slot.
 */
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
