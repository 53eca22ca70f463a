/**
 * The per-subscription gate in Redis that every worker process passes before sending an attempt
 * (issue #8, "Per-subscription concurrency, shared by all worker processes"):
 * - at most the subscription's in-flight limit (SUBSCRIPTION_MAX_IN_FLIGHT, lowered by the
 *   adaptive allowance of `throttle.ts` in @webhooks/shared) of its attempts hold a slot at once;
 * - with `rate_limit`, at most that many attempts are admitted in any window of
 *   {@link rateWindowMs};
 * - a job over the limit is parked: it leaves its worker slot (the processor moves it to BullMQ's
 *   delayed set without using an attempt) and the release of a slot hands the slot to the oldest
 *   parked job and names it, so that the releasing worker promotes it at once.
 *
 * Slots are leases that expire ({@link DeliveryGateOptions.leaseMs}), so a worker killed mid-attempt
 * cannot keep one. Each operation is one Lua script, atomic across workers, timed by Redis' clock
 * so that workers' clocks need not agree. Queueing, ordering and retries stay BullMQ's.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { nextAllowance, subscriptionGateKeys, type CongestionSignal } from '@webhooks/shared';

/**
 * The rate window, in ms: one second and a guard of 50 ms, so that the jitter between admitting an
 * attempt and its arrival cannot put `rate_limit + 1` requests into one second at the receiver.
 */
export const rateWindowMs = 1_050;

/** Idle gate state (a lowered allowance) is forgotten after a day, in ms. */
const stateTtlMs = 86_400_000;

const nowMs = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: leases, parked, sent, state. ARGV: job id, lease ms, max in flight, rate limit (0: none),
 * rate window ms. Returns {1, 0, allowance} when admitted, {0, -1, allowance} when parked,
 * {0, wait ms, allowance} when the rate limit holds it back.
 */
const acquireLua = `${nowMs}
local job, leaseMs, max, rate = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local allowance = redis.call('HGET', KEYS[4], 'allowance') or ARGV[3]
local limit = math.max(1, math.min(max, math.floor(tonumber(allowance))))
local handed = redis.call('ZSCORE', KEYS[1], job)
if not handed and redis.call('ZCARD', KEYS[1]) >= limit then
  redis.call('ZADD', KEYS[2], 'NX', now, job)
  redis.call('PEXPIRE', KEYS[2], ${stateTtlMs})
  return {0, -1, allowance}
end
if rate > 0 then
  local window = tonumber(ARGV[5])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
  if redis.call('ZCARD', KEYS[3]) >= rate then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    return {0, math.max(1, tonumber(oldest[2]) + window - now), allowance}
  end
  redis.call('ZADD', KEYS[3], now, job .. '@' .. now)
  redis.call('PEXPIRE', KEYS[3], window)
end
redis.call('ZADD', KEYS[1], now + leaseMs, job)
redis.call('PEXPIRE', KEYS[1], leaseMs)
redis.call('ZREM', KEYS[2], job)
return {1, 0, allowance}`;

/**
 * KEYS: leases, parked, state. ARGV: job id, lease ms, max in flight, allowance expected, new
 * allowance ('' for no change). The new allowance is set only if the allowance is still the one
 * expected (compare-and-set), so all the attempts of one window change it once. Returns the job
 * ids handed a slot.
 */
const releaseLua = `${nowMs}
local job, leaseMs, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREM', KEYS[1], job)
local allowance = redis.call('HGET', KEYS[3], 'allowance') or ARGV[3]
if ARGV[5] ~= '' and allowance == ARGV[4] then
  allowance = ARGV[5]
  if tonumber(allowance) >= max then
    redis.call('DEL', KEYS[3])
  else
    redis.call('HSET', KEYS[3], 'allowance', allowance)
    redis.call('PEXPIRE', KEYS[3], ${stateTtlMs})
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = math.max(1, math.min(max, math.floor(tonumber(allowance))))
local woken = {}
while redis.call('ZCARD', KEYS[1]) < limit do
  local head = redis.call('ZPOPMIN', KEYS[2])
  if #head == 0 then break end
  redis.call('ZADD', KEYS[1], now + leaseMs, head[1])
  redis.call('PEXPIRE', KEYS[1], leaseMs)
  woken[#woken + 1] = head[1]
end
return woken`;

/** What the gate answered a job. */
export type Admission =
  /** Send now. `allowance` is the allowance admitted under, as stored (a decimal string). */
  | { admitted: true; allowance: string }
  /** Wait: `waitMs` for the rate limit, or null when parked until a slot is handed over. */
  | { admitted: false; waitMs: number | null; allowance: string };

/** Options of {@link createDeliveryGate}. */
export interface DeliveryGateOptions {
  /** A producer connection (never a blocking one). */
  redis: Redis;
  /** QUEUE_PREFIX. */
  prefix: string;
  /** SUBSCRIPTION_MAX_IN_FLIGHT. */
  maxInFlight: number;
  /** How long a slot is held at most, in ms: longer than the longest attempt (DELIVERY_TIMEOUT_MS). */
  leaseMs: number;
  log: Logger;
}

/** The gate's operations; `jobId` is the BullMQ job id of the delivery. */
export interface DeliveryGate {
  /**
   * Takes a slot for `jobId`, or says how long to wait.
   *
   * @param rateLimit the subscription's `rate_limit` (attempts a second), null for none
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(subscriptionId: string, jobId: string, rateLimit: number | null): Promise<Admission>;
  /**
   * Gives the slot back and applies the attempt's congestion signal to the allowance it was
   * admitted under. Never throws: when Redis fails the slot's lease expires on its own.
   *
   * @returns the ids of parked jobs now holding a slot, to be promoted
   */
  release(
    subscriptionId: string,
    jobId: string,
    admittedUnder: string,
    signal: CongestionSignal,
  ): Promise<string[]>;
  /** Whether `jobId` holds a slot (one handed to it while it was being parked). */
  holds(subscriptionId: string, jobId: string): Promise<boolean>;
}

type GateCommands = {
  webhookGateAcquire(...args: Array<string | number>): Promise<[number, number, string]>;
  webhookGateRelease(...args: Array<string | number>): Promise<string[]>;
};

/** Creates the gate on `options.redis` (registering its two scripts there). */
export function createDeliveryGate(options: DeliveryGateOptions): DeliveryGate {
  const { redis, prefix, maxInFlight, leaseMs, log } = options;
  redis.defineCommand('webhookGateAcquire', { numberOfKeys: 4, lua: acquireLua });
  redis.defineCommand('webhookGateRelease', { numberOfKeys: 3, lua: releaseLua });
  const commands = redis as unknown as GateCommands;

  return {
    async acquire(subscriptionId, jobId, rateLimit) {
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      const [admitted, waitMs, allowance] = await commands.webhookGateAcquire(
        keys.leases,
        keys.parked,
        keys.sent,
        keys.state,
        jobId,
        leaseMs,
        maxInFlight,
        rateLimit ?? 0,
        rateWindowMs,
      );
      if (admitted === 1) return { admitted: true, allowance };
      return { admitted: false, waitMs: waitMs < 0 ? null : waitMs, allowance };
    },

    async release(subscriptionId, jobId, admittedUnder, signal) {
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      const next = String(nextAllowance(Number(admittedUnder), signal, maxInFlight));
      try {
        return await commands.webhookGateRelease(
          keys.leases,
          keys.parked,
          keys.state,
          jobId,
          leaseMs,
          maxInFlight,
          admittedUnder,
          next === admittedUnder ? '' : next,
        );
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'delivery gate release failed; the slot lease will expire');
        return [];
      }
    },

    async holds(subscriptionId, jobId) {
      return (await redis.zscore(subscriptionGateKeys(prefix, subscriptionId).leases, jobId)) !== null;
    },
  };
}
