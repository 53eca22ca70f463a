/**
 * The per-subscription gate in Redis that every worker passes before sending an attempt:
 * - at most the subscription's in-flight limit of its attempts hold a slot at once (the adaptive
 *   allowance of `throttle.ts`, between SUBSCRIPTION_MAX_IN_FLIGHT and the ceiling);
 * - with `rate_limit`, at most that many attempts in any window of {@link rateWindowMs};
 * - while its circuit breaker is open (`breaker.ts`), none but the half-open probe;
 * - a job refused waits a few ms in place when {@link waitsInSlot} allows, else is parked in
 *   BullMQ's delayed set (no attempt used, no worker slot held) for about the time the jobs parked
 *   before it need (`parkDelayMs`). A freed slot wakes the first parked job without reserving it.
 *
 * Slots are leases ({@link DeliveryGateOptions.leaseMs}), so a worker killed mid-attempt cannot
 * keep one. Each operation is one Lua script on Redis' clock, so workers' clocks need not agree.
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
import type { SubscriptionBreaker } from './breaker.js';
import { waitsInSlot, type InSlotWaitRule } from './in-slot-wait.js';

/**
 * The rate window, in ms: a second and a 100 ms guard, so that the jitter between admission and
 * arrival cannot put `rate_limit + 1` requests into one second at the receiver.
 */
export const rateWindowMs = 1_100;

/** Gate state is forgotten a day after it was created or last refreshed, in ms. */
const stateTtlMs = 86_400_000;

/**
 * The share of releases that refresh the state's TTL, and of admissions that refresh the leases':
 * a refresh on each would cost a command per delivery, and a state that expires loses only what
 * the next attempts learn again.
 */
const stateRefreshShare = 1 / 16;

/** The TTL of a subscription's leases key, in ms: a day, far past any lease. */
const leasesTtlMs = 86_400_000;

const nowMs = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: leases, parked, state. ARGV: job id, lease ms, base in flight, ms after which a parked
 * entry is forgotten, ceiling in flight, '1' when the job may be parked already ('0': it asks for
 * the first time), '1' to refresh the leases' TTL. Returns {admitted 1|0, allowance, parked jobs
 * ahead of this one (parked in the order they first asked), average slot time ms or '', age of the
 * oldest slot held in ms (refused by the breaker: ms until it may ask again), slow-start threshold
 * or '', breaker: '' closed, 'open', 'probing' (another job's probe is in flight) or 'probe' (this
 * job is the half-open probe, admitted whatever is in flight)}.
 *
 * Expired leases (their holder died) and forgotten parked entries are cleared only when the
 * subscription is at its limit, the one case where they change the answer: an admission under
 * the limit costs four commands instead of eight. The leases' key gets its TTL
 * ({@link leasesTtlMs}) when this admission creates it, and then on a share of admissions.
 */
const acquireLua = `${nowMs}
local job, leaseMs = ARGV[1], tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[3], 'allowance', 'average_ms', 'threshold', 'open_until', 'probe', 'probe_until')
local allowance = state[1] or ARGV[3]
local average = state[2] or ''
local threshold = state[3] or ''
local openUntil = tonumber(state[4])
if openUntil then
  local waitMs, breaker = openUntil - now, 'open'
  if waitMs <= 0 then
    local probeUntil = tonumber(state[6])
    if state[5] == job or not probeUntil or probeUntil <= now then
      redis.call('HSET', KEYS[3], 'probe', job, 'probe_until', now + leaseMs)
      redis.call('ZADD', KEYS[1], now + leaseMs, job)
      redis.call('PEXPIRE', KEYS[1], ${leasesTtlMs})
      if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], job) end
      return {1, '1', 0, average, 0, threshold, 'probe'}
    end
    waitMs, breaker = probeUntil - now, 'probing'
  end
  redis.call('ZADD', KEYS[2], 'NX', now, job)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4]))
  return {0, allowance, 0, average, waitMs, threshold, breaker}
end
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
  return {0, allowance, ahead, average, now - (tonumber(oldest[2]) - leaseMs), threshold, ''}
end
redis.call('ZADD', KEYS[1], now + leaseMs, job)
if held == 0 or ARGV[7] == '1' then redis.call('PEXPIRE', KEYS[1], ${leasesTtlMs}) end
if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], job) end
return {1, allowance, 0, average, 0, threshold, ''}`;

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
 * change), '1' to refresh the state's TTL, ms after which a parked entry is forgotten, the
 * attempt's outcome for the breaker ('1' confirmed, '0' failed, '' nothing sent), now in ms, the
 * breaker's window in ms. The new allowance (and threshold) is set only if the allowance is still
 * the one expected (compare-and-set), so all the attempts of one window change it once; an
 * allowance back at the base is not stored. The breaker's counts ride on the same `HSET`.
 *
 * Returns {the parked job first in line to promote when a slot is free, else '', failed attempts
 * in a row, attempts and failures in the breaker's window, times the breaker opened (0 closed),
 * 1 when this job was the half-open probe}. The parked line is popped before the leases are
 * counted: with nobody parked, the usual case, a release costs one command less.
 */
const releaseLua = `
redis.call('ZREM', KEYS[1], ARGV[1])
local s = redis.call('HMGET', KEYS[2], 'allowance', 'fails', 'win_at', 'win_n', 'win_fail', 'opens', 'probe')
local allowance = s[1] or ARGV[2]
local changed = ARGV[4] ~= '' and allowance == ARGV[3]
if changed then allowance = ARGV[4] end
if changed and ARGV[7] ~= '' then redis.call('HSET', KEYS[2], 'threshold', ARGV[7]) end
if changed and tonumber(allowance) == tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[2], 'allowance')
  changed = false
end
local fields = {'average_ms', ARGV[5]}
if changed then table.insert(fields, 'allowance') table.insert(fields, allowance) end
local fails, n, f = tonumber(s[2]) or 0, tonumber(s[4]) or 0, tonumber(s[5]) or 0
if ARGV[10] ~= '' then
  local now, winAt = tonumber(ARGV[11]), tonumber(s[3])
  if not winAt or now - winAt >= tonumber(ARGV[12]) then winAt, n, f = now, 0, 0 end
  n = n + 1
  if ARGV[10] == '1' then fails = 0 else fails, f = fails + 1, f + 1 end
  for _, v in ipairs({'win_at', winAt, 'win_n', n, 'win_fail', f, 'fails', fails}) do table.insert(fields, v) end
end
local probe = 0
if s[7] == ARGV[1] then
  redis.call('HDEL', KEYS[2], 'probe', 'probe_until')
  probe = 1
end
if redis.call('HSET', KEYS[2], unpack(fields)) > 0 or ARGV[8] == '1' then
  redis.call('PEXPIRE', KEYS[2], ${stateTtlMs})
end
local woken = ''
local head = redis.call('ZPOPMIN', KEYS[3])
if #head > 0 then
  local limit = math.max(1, math.min(tonumber(ARGV[6]), math.floor(tonumber(allowance))))
  if redis.call('ZCARD', KEYS[1]) < limit then
    woken = head[1]
  else
    redis.call('ZADD', KEYS[3], head[2], head[1])
    redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[9]))
  end
end
return {woken, fails, n, f, tonumber(s[6]) or 0, probe}`;

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
      /** The half-open breaker's probe (`breaker.ts`): its outcome closes or reopens it. */
      probe: boolean;
    }
  /** Parked over the in-flight limit, or while its breaker is open: wait `waitMs` and ask again. */
  | { admitted: false; waitMs: number; byBreaker?: true };

/** Options of {@link createDeliveryGate}. */
export interface DeliveryGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** QUEUE_PREFIX. */
  prefix: string;
  /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING. */
  bounds: InFlightBounds;
  /** How long a slot is held at most, in ms: longer than the longest attempt (DELIVERY_TIMEOUT_MS). */
  leaseMs: number;
  /** Longest wait of a parked delivery before it asks again, in ms. */
  maxParkMs: number;
  /** When a delivery over the limit waits in place instead of being parked. */
  inSlotWait: InSlotWaitRule;
  /** Moves a parked (delayed) job back to the queue now, when a slot frees; never throws. */
  wake(jobId: string): Promise<void>;
  log: Logger;
  /** Counted: a job parked, a subscription whose in-flight limit drops below the maximum. */
  metrics: Pick<WorkerMetrics, 'parked' | 'throttled'>;
  /** The subscription's circuit breaker, which each release's counts feed. */
  breaker: SubscriptionBreaker;
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
   * Gives the slot back; after an attempt (`attempt` null: none was made), applies its congestion
   * signal to the allowance it was admitted under, `heldMs` (how long the slot was held) to the
   * average, and, when its request was `sent`, its outcome to the breaker ('increase' is a
   * confirmed attempt).
   * Never throws: when Redis fails, the slot's lease expires on its own.
   */
  release(
    subscriptionId: string,
    jobId: string,
    admission: Extract<Admission, { admitted: true }>,
    attempt: { signal: CongestionSignal; sent: boolean } | null,
    heldMs: number,
  ): Promise<void>;
}

type GateCommands = {
  webhookGateAcquire(
    ...args: Array<string | number>
  ): Promise<[number, string, number, string, number, string, '' | 'open' | 'probing' | 'probe']>;
  webhookGateRate(...args: Array<string | number>): Promise<number>;
  webhookGateRelease(
    ...args: Array<string | number>
  ): Promise<[string, number, number, number, number, number]>;
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
  /** Subscriptions just found full, refused for a few ms without a round trip (never admitted). */
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
    const [admitted, allowance, ahead, average, oldestHeldMs, threshold, breaker] =
      await commands.webhookGateAcquire(
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
      const probe = breaker === 'probe';
      return { admitted: true, allowance, inFlightLimit: limit, averageMs, threshold: slowStartUntil, probe };
    }
    // Held by the breaker until its cool-down or its probe ends (a second part spread at random, so
    // that the deliveries held do not all ask at once); its close wakes the first parked.
    if (breaker !== '')
      return { admitted: false, waitMs: oldestHeldMs + Math.round(Math.random() * 1_000), byBreaker: true };
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
        admission.byBreaker !== true &&
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
      const outcome = attempt === null || !attempt.sent ? '' : attempt.signal === 'increase' ? '1' : '0';
      try {
        const [woken, failuresInRow, windowAttempts, windowFailures, opens, probe] =
          await commands.webhookGateRelease(
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
            outcome,
            Date.now(),
            options.breaker.windowMs,
          );
        // Not awaited: the slot is free already, and the promotion is only a shortcut.
        if (woken !== '') void wake(woken);
        if (outcome !== '') {
          const counts = { failuresInRow, windowAttempts, windowFailures, opens };
          await options.breaker.ended(subscriptionId, counts, outcome === '1', probe === 1);
        }
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'delivery gate release failed; the slot lease will expire');
      }
    },
  };
}
