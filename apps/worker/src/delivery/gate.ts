/**
 * The per-subscription gate in Redis that every worker process passes before sending an attempt:
 * - at most the subscription's in-flight limit of its attempts hold a slot at once: the adaptive
 *   allowance of `throttle.ts` in @webhooks/shared, which starts at SUBSCRIPTION_MAX_IN_FLIGHT,
 *   falls when the callback times out and rises (doubling per window until it first falls, when
 *   the callback answers fast) to SUBSCRIPTION_IN_FLIGHT_CEILING while it answers 200 at its
 *   usual pace;
 * - with `rate_limit`, at most that many attempts are admitted in any window of
 *   {@link rateWindowMs};
 * - a job over the limit waits a few ms in place when {@link waitsInSlot} allows, else is parked:
 *   the processor moves it to BullMQ's delayed set, without using an attempt and without holding
 *   a worker slot, for about the time the deliveries parked before it need to go through
 *   (`parkDelayMs`), and never much past the end of the oldest slot's lease (a slot whose holder
 *   died frees itself then, and wakes nobody). The slot is taken before the delivery is read from
 *   PostgreSQL, so parking costs two Redis round trips and no query. A slot freed wakes the parked
 *   job first in line, but is not reserved for it: whichever of the subscription's jobs asks next
 *   takes it, so a slot never idles while a woken job travels through a long queue.
 *
 * Slots are leases that expire ({@link DeliveryGateOptions.leaseMs}), so a worker killed mid-attempt
 * cannot keep one. Each operation is one Lua script, atomic across workers, timed by Redis' clock
 * so that workers' clocks need not agree. Queueing, ordering and retries stay BullMQ's.
 */
import { setTimeout } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  averageDurationMs,
  inFlightLimit,
  minParkMs,
  nextAllowance,
  nextThreshold,
  slowStartThreshold,
  parkDelayMs,
  turnMs,
  subscriptionGateKeys,
  entersThrottling,
  isSlowing,
  type CongestionSignal,
  type InFlightBounds,
  type ParkingView,
  type RedisConnection,
} from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';
import { waitsInSlot, type InSlotWaitRule } from './in-slot-wait.js';

/**
 * The rate window, in ms: one second and a guard of 100 ms, so that the jitter between admitting an
 * attempt and its arrival cannot put `rate_limit + 1` requests into one second at the receiver
 * (50 ms is not enough on a loaded 2-core machine). The cost is a pace up to 10% below
 * `rate_limit`, which keeps the promise that it is never exceeded.
 */
export const rateWindowMs = 1_100;

/**
 * Gate state (a lowered allowance, the average duration) is forgotten a day after it was created
 * or last refreshed, in ms.
 */
const stateTtlMs = 86_400_000;

/**
 * The share of releases that refresh the state's TTL, and of admissions that refresh the leases'.
 * Every release rewrites the state, and a refresh on each would cost a command per delivery; a
 * state in use is refreshed within a few dozen releases, and one that expires anyway loses only a
 * lowered allowance, which the callback's next timeouts lower again (the average slot time is
 * written back by the release that finds it gone, with a fresh TTL).
 */
const stateRefreshShare = 1 / 16;

/**
 * The TTL of a subscription's leases key, in ms, set when an admission creates the key and on a
 * share of the others ({@link stateRefreshShare}). A day, far past any lease: a key that expires
 * with a live lease in it (no refresh drawn in a day of admissions) lets that slot be taken twice
 * until the lease ends, no worse.
 */
const leasesTtlMs = 86_400_000;

const nowMs = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: leases, parked, state. ARGV: job id, lease ms, base in flight, ms after which a parked
 * entry is forgotten, ceiling in flight, '1' when the job may be parked already ('0': it asks for
 * the first time), '1' to refresh the leases' TTL. Returns {admitted 1|0, allowance, parked jobs
 * ahead of this one (parked in the order they first asked), average slot time ms or '', age of the
 * oldest slot held in ms, slow-start threshold or ''}.
 *
 * Expired leases (their holder died) and forgotten parked entries are cleared only when the
 * subscription is at its limit, the one case where they change the answer: an admission under
 * the limit costs four commands instead of eight.
 *
 * The leases' key gets its TTL ({@link leasesTtlMs}) when this admission creates it, and then on
 * a share of admissions ({@link stateRefreshShare}), not on each: the last release deletes the key
 * anyway, so the TTL only bounds how long a crashed holder's expired lease can linger.
 */
const acquireLua = `${nowMs}
local job, leaseMs = ARGV[1], tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[3], 'allowance', 'average_ms', 'threshold')
local allowance = state[1] or ARGV[3]
local average = state[2] or ''
local threshold = state[3] or ''
local limit = math.max(1, math.min(tonumber(ARGV[5]), math.floor(tonumber(allowance))))
local held = redis.call('ZCARD', KEYS[1])
if held >= limit then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  held = redis.call('ZCARD', KEYS[1])
end
if held >= limit then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[4]))
  redis.call('ZADD', KEYS[2], 'NX', now, job)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4]))
  local ahead = redis.call('ZRANK', KEYS[2], job)
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, allowance, ahead, average, now - (tonumber(oldest[2]) - leaseMs), threshold}
end
redis.call('ZADD', KEYS[1], now + leaseMs, job)
if held == 0 or ARGV[7] == '1' then redis.call('PEXPIRE', KEYS[1], ${leasesTtlMs}) end
if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], job) end
return {1, allowance, 0, average, 0, threshold}`;

/**
 * KEYS: sent. ARGV: job id, rate limit, rate window ms. Returns 0 and counts the attempt when the
 * window has room, else the ms until it has.
 */
const rateLua = `${nowMs}
local rate, window = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= rate then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, ARGV[1] .. '@' .. now)
redis.call('PEXPIRE', KEYS[1], window)
return 0`;

/**
 * KEYS: leases, state, parked. ARGV: job id, base in flight, allowance expected, new allowance (''
 * for no change), new average slot time ms, ceiling in flight, new slow-start threshold ('' for no
 * change), '1' to refresh the state's TTL, ms after which a parked entry is forgotten. The new
 * allowance (and threshold) is set only if the allowance is still the one expected
 * (compare-and-set), so all the attempts of one window change it once; an allowance back at the
 * base is not stored.
 * When a slot is free, returns the id of the parked job first in line (in a list), to be promoted;
 * else an empty list.
 *
 * The parked line is popped before the leases are counted: with nobody parked, the usual case, a
 * release costs one command less, and the rare head popped while the subscription is still full
 * goes back in its place.
 */
const releaseLua = `
redis.call('ZREM', KEYS[1], ARGV[1])
local allowance = redis.call('HGET', KEYS[2], 'allowance') or ARGV[2]
local changed = ARGV[4] ~= '' and allowance == ARGV[3]
if changed then allowance = ARGV[4] end
if changed and ARGV[7] ~= '' then redis.call('HSET', KEYS[2], 'threshold', ARGV[7]) end
if changed and tonumber(allowance) == tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[2], 'allowance')
  changed = false
end
local created
if changed then
  created = redis.call('HSET', KEYS[2], 'average_ms', ARGV[5], 'allowance', allowance)
else
  created = redis.call('HSET', KEYS[2], 'average_ms', ARGV[5])
end
if created > 0 or ARGV[8] == '1' then redis.call('PEXPIRE', KEYS[2], ${stateTtlMs}) end
local woken = {}
local head = redis.call('ZPOPMIN', KEYS[3])
if #head > 0 then
  local limit = math.max(1, math.min(tonumber(ARGV[6]), math.floor(tonumber(allowance))))
  if redis.call('ZCARD', KEYS[1]) < limit then
    woken[1] = head[1]
  else
    redis.call('ZADD', KEYS[3], head[2], head[1])
    redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[9]))
  end
end
return woken`;

/** What the gate answered a job. */
export type Admission =
  /**
   * Send now. `allowance` is the allowance admitted under, as stored (a decimal string),
   * `inFlightLimit` its integer part, `averageMs` the subscription's average slot time (null
   * when none is known yet) and `threshold` its slow-start threshold (`nextThreshold`).
   */
  | {
      admitted: true;
      allowance: string;
      inFlightLimit: number;
      averageMs: number | null;
      threshold: number;
    }
  /** Parked over the in-flight limit: wait `waitMs` and ask again. */
  | { admitted: false; waitMs: number };

/** Options of {@link createDeliveryGate}. */
export interface DeliveryGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** QUEUE_PREFIX. */
  prefix: string;
  /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING. */
  bounds: InFlightBounds;
  /**
  /** How long a slot is held at most, in ms: longer than the longest attempt (DELIVERY_TIMEOUT_MS). */
  leaseMs: number;
  /** Longest wait of a parked delivery before it asks again, in ms. */
  maxParkMs: number;
  /** When a delivery over the limit waits in place instead of being parked. */
  inSlotWait: InSlotWaitRule;
  /**
   * Moves a parked (delayed) job back to the queue now; never throws. Called when a slot frees, for
   * the subscription's parked job first in line, so that a slot does not idle while parked jobs
   * wait out an estimate that was too long. The job is not given the slot: it asks like any other.
   */
  wake(jobId: string): Promise<void>;
  log: Logger;
  /** Counted: a job parked, a subscription whose in-flight limit drops below the maximum. */
  metrics: Pick<WorkerMetrics, 'parked' | 'throttled'>;
}

/** The gate's operations; `jobId` is the BullMQ job id of the delivery. */
export interface DeliveryGate {
  /**
   * Takes an in-flight slot for `jobId`, waiting for one in place as long as {@link waitsInSlot}
   * allows, or says how long to park. `firstAsk`: the delivery has never asked before (an inline
   * first attempt), so it cannot be among the parked ones, and the gate skips removing it there.
   *
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(subscriptionId: string, jobId: string, firstAsk?: boolean): Promise<Admission>;
  /**
   * Counts an attempt against the subscription's `rate_limit` (attempts a second) when its window
   * has room.
   *
   * @returns 0 when counted, else the ms to wait
   * @throws ioredis' errors when Redis cannot be reached
   */
  pace(subscriptionId: string, jobId: string, rateLimit: number): Promise<number>;
  /**
   * Gives the slot back; after an attempt, applies its congestion signal to the allowance it was
   * admitted under (`attempt` null: nothing was sent), and `heldMs`, how long the slot was held,
   * to the subscription's average. Never throws: when Redis fails, the slot's lease expires on its
   * own.
   */
  release(
    subscriptionId: string,
    jobId: string,
    admission: Extract<Admission, { admitted: true }>,
    attempt: { signal: CongestionSignal } | null,
    heldMs: number,
  ): Promise<void>;
}

type GateCommands = {
  webhookGateAcquire(
    ...args: Array<string | number>
  ): Promise<[number, string, number, string, number, string]>;
  webhookGateRate(...args: Array<string | number>): Promise<number>;
  webhookGateRelease(...args: Array<string | number>): Promise<string[]>;
};

/** Most subscriptions this process remembers as full (a bound on memory; the hints are short-lived). */
const maxFullHints = 10_000;

/** Creates the gate on `options.redis` (registering its scripts there). */
export function createDeliveryGate(options: DeliveryGateOptions): DeliveryGate {
  const { redis, prefix, bounds, leaseMs, maxParkMs, wake, log, metrics } = options;
  let waitingInSlot = 0;
  /** How long a parked entry is remembered, in ms: past the longest park, so a live one is kept. */
  const parkedMemoryMs = maxParkMs * 2;
  redis.defineCommand('webhookGateAcquire', { numberOfKeys: 3, lua: acquireLua });
  redis.defineCommand('webhookGateRate', { numberOfKeys: 1, lua: rateLua });
  redis.defineCommand('webhookGateRelease', { numberOfKeys: 3, lua: releaseLua });
  const commands = redis as unknown as GateCommands;
  /**
   * Subscriptions the gate just found full, until about when one of their slots frees: more of
   * their jobs fetched meanwhile park without a round trip. Only ever refuses (the gate in Redis
   * alone admits), and only for a few ms, so a stale hint costs a short wait, never a slot.
   */
  const fullHints = new Map<string, ParkingView & { until: number }>();

  const park = (view: ParkingView): Admission => ({
    admitted: false,
    waitMs: parkDelayMs(view, maxParkMs, Math.random()),
  });

  /**
   * One question to the gate; `useHint`: a subscription just found full is refused without one;
   * `mayBeParked`: the job may be among the parked ones (see {@link DeliveryGate.acquire}).
   */
  const ask = async (
    subscriptionId: string,
    jobId: string,
    useHint: boolean,
    mayBeParked: boolean,
  ): Promise<Admission> => {
    const hint = fullHints.get(subscriptionId);
    if (useHint && hint !== undefined && hint.until > Date.now()) {
      hint.parked += 1;
      return park(hint);
    }
    const keys = subscriptionGateKeys(prefix, subscriptionId);
    const [admitted, allowance, ahead, average, oldestHeldMs, threshold] = await commands.webhookGateAcquire(
      keys.leases,
      keys.parked,
      keys.state,
      jobId,
      leaseMs,
      bounds.base,
      parkedMemoryMs,
      bounds.ceiling,
      mayBeParked ? '1' : '0',
      Math.random() < stateRefreshShare ? '1' : '0',
    );
    const averageMs = average === '' ? null : Number(average);
    const limit = inFlightLimit(Number(allowance), bounds.ceiling);
    if (admitted === 1) {
      const slowStartUntil = threshold === '' ? bounds.ceiling : Number(threshold);
      return { admitted: true, allowance, inFlightLimit: limit, averageMs, threshold: slowStartUntil };
    }
    if (fullHints.size >= maxFullHints) fullHints.clear();
    const view: ParkingView = { parked: ahead, limit, averageMs, oldestHeldMs, leaseMs };
    const untilSlotFrees = Math.min(50, Math.max(minParkMs, (turnMs(view) ?? minParkMs) / limit));
    const fresh = { ...view, until: Date.now() + untilSlotFrees };
    fullHints.set(subscriptionId, fresh);
    return park(fresh);
  };

  return {
    async acquire(subscriptionId, jobId, firstAsk = false) {
      let admission = await ask(subscriptionId, jobId, true, !firstAsk);
      let waitedMs = 0;
      while (
        !admission.admitted &&
        waitsInSlot(admission.waitMs, waitedMs, waitingInSlot, options.inSlotWait)
      ) {
        waitingInSlot += 1;
        try {
          await setTimeout(admission.waitMs);
        } finally {
          waitingInSlot -= 1;
        }
        waitedMs += admission.waitMs;
        // Refused, it may have been parked by that answer.
        admission = await ask(subscriptionId, jobId, false, true);
      }
      if (!admission.admitted) metrics.parked.inc();
      return admission;
    },

    async pace(subscriptionId, jobId, rateLimit) {
      const { sent } = subscriptionGateKeys(prefix, subscriptionId);
      return commands.webhookGateRate(sent, jobId, rateLimit, rateWindowMs);
    },

    async release(subscriptionId, jobId, admission, attempt, heldMs) {
      fullHints.delete(subscriptionId);
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      const allowance = Number(admission.allowance);
      // This attempt's slot time counts: the first window has no average before it.
      const average = averageDurationMs(admission.averageMs, heldMs);
      const slowing = isSlowing(heldMs, admission.averageMs);
      const next =
        attempt === null
          ? allowance
          : nextAllowance(
              allowance,
              attempt.signal,
              bounds,
              slowing,
              slowStartThreshold(admission.threshold, average),
            );
      const threshold =
        attempt === null
          ? admission.threshold
          : nextThreshold(allowance, next, admission.threshold, bounds, attempt.signal, slowing);
      if (entersThrottling(allowance, next, bounds.base)) metrics.throttled.inc();
      try {
        const woken = await commands.webhookGateRelease(
          keys.leases,
          keys.state,
          keys.parked,
          jobId,
          bounds.base,
          admission.allowance,
          next === allowance ? '' : String(next),
          Math.round(average),
          bounds.ceiling,
          threshold === admission.threshold ? '' : threshold,
          Math.random() < stateRefreshShare ? '1' : '0',
          parkedMemoryMs,
        );
        // Not awaited: the slot is free already, and the promotion is only a shortcut.
        for (const id of woken) void wake(id);
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'delivery gate release failed; the slot lease will expire');
      }
    },
  };
}
