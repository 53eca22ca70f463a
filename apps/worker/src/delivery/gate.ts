/**
 * The per-subscription gate in Redis that every worker process passes before sending an attempt
 * (issue #8, "Per-subscription concurrency, shared by all worker processes"):
 * - at most the subscription's in-flight limit (SUBSCRIPTION_MAX_IN_FLIGHT, lowered by the
 *   adaptive allowance of `throttle.ts` in @webhooks/shared) of its attempts hold a slot at once;
 * - with `rate_limit`, at most that many attempts are admitted in any window of
 *   {@link rateWindowMs};
 * - a job over the limit is parked: the processor moves it to BullMQ's delayed set, without using
 *   an attempt and without holding a worker slot, for about the time the deliveries parked before
 *   it need to go through (`parkDelayMs`). Nothing is handed over or woken: a slot freed is taken
 *   by whichever of the subscription's jobs asks next, so a slot never idles while a woken job
 *   travels through the queue.
 *
 * Slots are leases that expire ({@link DeliveryGateOptions.leaseMs}), so a worker killed mid-attempt
 * cannot keep one. Each operation is one Lua script, atomic across workers, timed by Redis' clock
 * so that workers' clocks need not agree. Queueing, ordering and retries stay BullMQ's.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  averageDurationMs,
  inFlightLimit,
  nextAllowance,
  parkDelayMs,
  subscriptionGateKeys,
  type CongestionSignal,
} from '@webhooks/shared';

/**
 * The rate window, in ms: one second and a guard of 50 ms, so that the jitter between admitting an
 * attempt and its arrival cannot put `rate_limit + 1` requests into one second at the receiver.
 */
export const rateWindowMs = 1_050;

/** Gate state (a lowered allowance, the average duration) is forgotten after a day idle, in ms. */
const stateTtlMs = 86_400_000;

const nowMs = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: leases, parked, sent, state. ARGV: job id, lease ms, max in flight, rate limit (0: none),
 * rate window ms, ms after which a parked entry is forgotten. Returns {admitted 1|0, rate wait ms
 * (-1 when parked or admitted), allowance, parked count, average duration ms or '', age of the
 * oldest attempt in flight in ms}.
 */
const acquireLua = `${nowMs}
local job, leaseMs, max, rate = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[6]))
local state = redis.call('HMGET', KEYS[4], 'allowance', 'average_ms')
local allowance = state[1] or ARGV[3]
local average = state[2] or ''
local limit = math.max(1, math.min(max, math.floor(tonumber(allowance))))
if redis.call('ZCARD', KEYS[1]) >= limit then
  local parked = redis.call('ZCARD', KEYS[2])
  redis.call('ZADD', KEYS[2], now, job)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[6]))
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, -1, allowance, parked, average, now - (tonumber(oldest[2]) - leaseMs)}
end
if rate > 0 then
  local window = tonumber(ARGV[5])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
  if redis.call('ZCARD', KEYS[3]) >= rate then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    return {0, math.max(1, tonumber(oldest[2]) + window - now), allowance, 0, average, 0}
  end
  redis.call('ZADD', KEYS[3], now, job .. '@' .. now)
  redis.call('PEXPIRE', KEYS[3], window)
end
redis.call('ZADD', KEYS[1], now + leaseMs, job)
redis.call('PEXPIRE', KEYS[1], leaseMs)
redis.call('ZREM', KEYS[2], job)
return {1, -1, allowance, 0, average, 0}`;

/**
 * KEYS: leases, state. ARGV: job id, max in flight, allowance expected, new allowance ('' for no
 * change), new average duration ms. The new allowance is set only if the allowance is still the
 * one expected (compare-and-set), so all the attempts of one window change it once.
 */
const releaseLua = `
redis.call('ZREM', KEYS[1], ARGV[1])
local allowance = redis.call('HGET', KEYS[2], 'allowance') or ARGV[2]
if ARGV[4] ~= '' and allowance == ARGV[3] then
  if tonumber(ARGV[4]) >= tonumber(ARGV[2]) then
    redis.call('HDEL', KEYS[2], 'allowance')
  else
    redis.call('HSET', KEYS[2], 'allowance', ARGV[4])
  end
end
redis.call('HSET', KEYS[2], 'average_ms', ARGV[5])
redis.call('PEXPIRE', KEYS[2], ${stateTtlMs})
return 1`;

/** What the gate answered a job. */
export type Admission =
  /**
   * Send now. `allowance` is the allowance admitted under, as stored (a decimal string), and
   * `averageMs` the subscription's average attempt duration (null when none is known yet).
   */
  | { admitted: true; allowance: string; averageMs: number | null }
  /** Wait `waitMs` (parked over the in-flight limit, or held back by the rate limit) and ask again. */
  | { admitted: false; waitMs: number };

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
  /** Longest wait of a parked delivery before it asks again, in ms. */
  maxParkMs: number;
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
   * Gives the slot back, applies the attempt's congestion signal to the allowance it was admitted
   * under and its duration to the average. Never throws: when Redis fails, the slot's lease expires
   * on its own.
   */
  release(
    subscriptionId: string,
    jobId: string,
    admission: Extract<Admission, { admitted: true }>,
    attempt: { signal: CongestionSignal; durationMs: number },
  ): Promise<void>;
}

type GateCommands = {
  webhookGateAcquire(
    ...args: Array<string | number>
  ): Promise<[number, number, string, number, string, number]>;
  webhookGateRelease(...args: Array<string | number>): Promise<number>;
};

/** Creates the gate on `options.redis` (registering its two scripts there). */
export function createDeliveryGate(options: DeliveryGateOptions): DeliveryGate {
  const { redis, prefix, maxInFlight, leaseMs, maxParkMs, log } = options;
  redis.defineCommand('webhookGateAcquire', { numberOfKeys: 4, lua: acquireLua });
  redis.defineCommand('webhookGateRelease', { numberOfKeys: 2, lua: releaseLua });
  const commands = redis as unknown as GateCommands;

  return {
    async acquire(subscriptionId, jobId, rateLimit) {
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      const [admitted, rateWaitMs, allowance, parked, average, oldestInFlightMs] =
        await commands.webhookGateAcquire(
          keys.leases,
          keys.parked,
          keys.sent,
          keys.state,
          jobId,
          leaseMs,
          maxInFlight,
          rateLimit ?? 0,
          rateWindowMs,
          maxParkMs * 2,
        );
      const averageMs = average === '' ? null : Number(average);
      if (admitted === 1) return { admitted: true, allowance, averageMs };
      if (rateWaitMs >= 0) return { admitted: false, waitMs: rateWaitMs };
      const limit = inFlightLimit(Number(allowance), maxInFlight);
      // Attempts in flight for longer than the average (a callback that just began to hang) say more.
      const turnMs = Math.max(averageMs ?? 0, oldestInFlightMs) || null;
      return { admitted: false, waitMs: parkDelayMs(parked, limit, turnMs, maxParkMs, Math.random()) };
    },

    async release(subscriptionId, jobId, admission, attempt) {
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      const next = String(nextAllowance(Number(admission.allowance), attempt.signal, maxInFlight));
      const average = averageDurationMs(admission.averageMs, attempt.durationMs);
      try {
        await commands.webhookGateRelease(
          keys.leases,
          keys.state,
          jobId,
          maxInFlight,
          admission.allowance,
          next === admission.allowance ? '' : next,
          Math.round(average),
        );
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'delivery gate release failed; the slot lease will expire');
      }
    },
  };
}
