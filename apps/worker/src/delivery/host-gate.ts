/**
 * The cap per destination host: at most HOST_MAX_IN_FLIGHT attempts in flight to one callback host
 * (its registrable domain, {@link hostCapKey}) across all subscriptions, accounts and workers, so
 * the service cannot be turned into a flood on a third party. Accounts share a host's slots
 * max-min fairly while others wait for one (`acquireLua`). An attempt over the cap waits in
 * BullMQ's delayed set, using no attempt, until a freed slot wakes it, or after
 * {@link hostWaitMs} in case that wake-up was lost. Slots are leases in a sorted set per host, so
 * a killed worker cannot keep one.
 */
import type { Logger } from 'pino';
import { getDomain } from 'tldts';
import { defineScript, redisNowLua, type RedisConnection } from '@webhooks/shared';

/**
 * How long an attempt over its host's cap waits at most before asking again, in ms: 250 to 750,
 * spread so that the waiting attempts of many subscriptions do not all return at once. A freed slot
 * wakes a waiting attempt before that; this bounds what a lost wake-up (its job not yet delayed, a
 * worker gone) costs.
 *
 * @param random a number in [0, 1) (Math.random)
 */
export function hostWaitMs(random: number): number {
  return Math.round(250 + 500 * random);
}

/**
 * How long an account that asked for a host's slot and was refused counts as sharing the host, in
 * ms: several of its waits ({@link hostWaitMs}), so that an account whose deliveries keep asking
 * keeps its share, and one that stopped asking gives it back within a second.
 */
const askedMemoryMs = 1_000;

/**
 * Lua: `heldByAccount(now)`, a table of account → the live slots it holds, read from the leases
 * (`K.leases`; a member names its account). Only the contended paths call it (another account asking,
 * an attempt waiting to be woken), at most HOST_MAX_IN_FLIGHT members read: the usual admission
 * and release keep no per-account count, four commands an admission and two a release.
 */
const countHeldLua = `
local function heldByAccount(now)
  local counts = {}
  for _, holder in ipairs(redis.call('ZRANGEBYSCORE', K.leases, now, '+inf')) do
    local owner = string.sub(holder, 1, string.find(holder, '\t', 1, true) - 1)
    counts[owner] = (counts[owner] or 0) + 1
  end
  return counts
end`;

/**
 * How long a host's leases key lives, in ms: set when an admission creates it and on
 * {@link leasesRefreshShare} of the others, not on each (a command per delivery). The last release
 * deletes the key anyway; the TTL bounds how long a crashed holder's expired lease lingers. A day,
 * far past any lease: a key that expires with a live lease in it (no refresh drawn in a day of
 * admissions) lets that slot be taken twice until the lease ends, no worse.
 */
const leasesTtlMs = 86_400_000;

/** The share of admissions that refresh the leases key's TTL ({@link leasesTtlMs}). */
const leasesRefreshShare = 1 / 16;

/**
 * The `rate_limit` window, in ms: a second and a 100 ms guard, so that the jitter between admission
 * and arrival cannot put `rate_limit + 1` requests into one second at the receiver.
 */
export const rateWindowMs = 1_100;

/**
 * Admission. `K.leases`: `<account>\t<job id>` → lease end ms; `K.asking`: account → when it was
 * last refused, ms; `K.waiting`: `<account>\t<job id>` → when it first waited, ms; `K.sent`: the
 * subscription's attempts in the last {@link rateWindowMs}, counted only when `A.rate` (its
 * `rate_limit`, attempts a second) is not ''. `A.refreshTtl` '1' refreshes the leases' TTL.
 * Returns 0 and takes a slot; -1 over the host's cap or share, and the member waits to be woken;
 * or, the subscription's window full, the ms until it has room (nothing taken, nobody woken).
 *
 * Max-min fairness between the accounts sharing the host: each has a share of the cap, the cap
 * over the accounts holding slots or refused lately (at least 1). An account under its share takes
 * a free slot; one at or over it takes a free slot only while no other account is waiting for one,
 * so that the host's slots are used whoever asks, and a flood that holds them all gives them up to
 * a newcomer as its attempts end. Expired leases (their holder died) are cleared only at the cap,
 * where they change the answer.
 */
const acquireLua = `${countHeldLua}
local member, lease, cap, account, memory = A.member, tonumber(A.leaseMs), tonumber(A.cap), A.account, tonumber(A.askedMemoryMs)
local rate = tonumber(A.rate)
if rate then
  redis.call('ZREMRANGEBYSCORE', K.sent, '-inf', now - ${rateWindowMs})
  if redis.call('ZCARD', K.sent) >= rate then
    local oldest = redis.call('ZRANGE', K.sent, 0, 0, 'WITHSCORES')
    return math.max(1, tonumber(oldest[2]) + ${rateWindowMs} - now)
  end
end
local function taken()
  if rate then
    redis.call('ZADD', K.sent, now, member .. '@' .. now)
    redis.call('PEXPIRE', K.sent, ${rateWindowMs})
  end
  return 0
end
local held = redis.call('ZCARD', K.leases)
if held >= cap then
  if redis.call('ZSCORE', K.leases, member) then
    redis.call('ZADD', K.leases, now + lease, member)
    return taken()
  end
  held = held - redis.call('ZREMRANGEBYSCORE', K.leases, '-inf', now)
end
-- Shares matter only while another account waits: the usual admission reads one more key.
local askers = {}
local othersAsking = false
local anyAsking = redis.call('EXISTS', K.asking) == 1
if anyAsking then
  redis.call('ZREMRANGEBYSCORE', K.asking, '-inf', now - memory)
  for _, asker in ipairs(redis.call('ZRANGE', K.asking, 0, -1)) do
    if asker ~= account then
      othersAsking = true
      askers[#askers + 1] = asker
    end
  end
end
local admitted = held < cap
if admitted and othersAsking then
  local counts = heldByAccount(now)
  local sharing = 0
  for _ in pairs(counts) do sharing = sharing + 1 end
  for _, asker in ipairs(askers) do
    if counts[asker] == nil then sharing = sharing + 1 end
  end
  local mine = counts[account] or 0
  if mine == 0 then sharing = sharing + 1 end
  admitted = mine < math.max(1, math.floor(cap / sharing))
end
if admitted then
  redis.call('ZADD', K.leases, now + lease, member)
  -- No lease left (none held, or the expired ones cleared at the cap): this ZADD made the key.
  if held == 0 or A.refreshTtl == '1' then redis.call('PEXPIRE', K.leases, ${leasesTtlMs}) end
  if anyAsking then
    redis.call('ZREM', K.asking, account)
    redis.call('ZREM', K.waiting, member)
  end
  return taken()
end
redis.call('ZADD', K.asking, now, account)
redis.call('PEXPIRE', K.asking, memory)
redis.call('ZADD', K.waiting, 'NX', now, member)
redis.call('PEXPIRE', K.waiting, lease)
return -1`;

/** Most waiting attempts a release looks at to choose the one it wakes. */
const wakeCandidates = 32;

/**
 * Release: gives `A.member`'s slot back, once, and then names the
 * waiting member to wake (removed from the waiting set), or returns false: among the oldest
 * {@link wakeCandidates}, the oldest of the account holding the fewest slots, so that a freed slot
 * goes to an account under its share before a flood's next attempt.
 */
const releaseLua = `${countHeldLua}
if redis.call('ZREM', K.leases, A.member) == 0 then return false end
local waiters = redis.call('ZRANGE', K.waiting, 0, ${wakeCandidates - 1})
if #waiters == 0 then return false end
${redisNowLua}
local counts = heldByAccount(now)
local best, fewest = false, nil
for _, waiter in ipairs(waiters) do
  local held = counts[string.sub(waiter, 1, string.find(waiter, '\t', 1, true) - 1)] or 0
  if fewest == nil or held < fewest then best, fewest = waiter, held end
  if held == 0 then break end
end
redis.call('ZREM', K.waiting, best)
return best`;

/** Options of {@link createHostGate}. */
export interface HostGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** QUEUE_PREFIX as configured, without the hash tag a Cluster adds ({@link hostCapKeys}). */
  prefix: string;
  /** HOST_MAX_IN_FLIGHT. */
  maxInFlight: number;
  /** How long a slot is held at most, in ms: longer than the longest attempt. */
  leaseMs: number;
  /**
   * Wakes the attempt of job `jobId`, waiting for a slot that just freed (promotes its delayed
   * job). Never throws: a wake-up that finds nothing to wake is dropped.
   */
  wake: (jobId: string) => Promise<void>;
  log: Logger;
}

/** The host cap's operations; `jobId` is the BullMQ job id of the delivery. */
export interface HostGate {
  /**
   * Takes a slot of `hostname` for `accountId`'s delivery, within the account's share of the host
   * while other accounts wait for one (`acquireLua`), and, with `rate`, counts the attempt in its
   * subscription's `rate_limit` (`perSecond` attempts in any {@link rateWindowMs}) in the same
   * step: a full window takes nothing.
   *
   * @returns 0 when taken, else the ms to wait before asking again
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(
    hostname: string,
    accountId: string,
    jobId: string,
    rate?: { subscriptionId: string; perSecond: number },
  ): Promise<number>;
  /**
   * Gives the slot back and wakes an attempt waiting for one. Never throws: when Redis fails, the
   * lease expires on its own.
   */
  release(hostname: string, accountId: string, jobId: string): Promise<void>;
}

/**
 * What the cap counts a callback host as: its registrable domain by the Public Suffix List, its
 * private section included (tldts), so that `a.victim.com`, `B.victim.com.` and `victim.com` share
 * one cap while two apps under a hosting suffix (`x.herokuapp.com`, `y.herokuapp.com`) keep one
 * each; an IP literal or a name without a registrable domain counts as itself, lower-cased and
 * without a trailing dot.
 */
export function hostCapKey(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  return getDomain(host, { allowPrivateDomains: true }) ?? host;
}

/**
 * The Redis keys of a host's slots: the leases (whose members name their account), the accounts
 * refused lately, the attempts waiting to be woken, and subscription `subscriptionId`'s
 * `rate_limit` window (`rate`), kept with the host it is checked with. They share the host as their
 * hash tag (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags),
 * so that each host's scripts run in one slot and, on a Redis Cluster, many hosts' caps spread over
 * its masters instead of all sitting on the slot of the service's `{prefix}`. `prefix` is
 * QUEUE_PREFIX as configured; one holding a hash tag of its own keeps every host on that tag's
 * slot.
 */
export function hostCapKeys(prefix: string, hostname: string, subscriptionId = '') {
  const host = `${prefix}:host:{${hostCapKey(hostname)}}`;
  return {
    leases: `${host}:leases`,
    asking: `${host}:asking`,
    waiting: `${host}:waiting`,
    rate: `${host}:rate:${subscriptionId}`,
  };
}

/** Creates the host cap on `options.redis` (registering its scripts there). */
export function createHostGate(options: HostGateOptions): HostGate {
  const { redis, prefix, maxInFlight, leaseMs, wake, log } = options;
  const acquireScript = defineScript<number>()(redis, {
    name: 'webhookHostAcquire',
    keys: ['leases', 'asking', 'waiting', 'sent'],
    args: ['member', 'leaseMs', 'cap', 'account', 'askedMemoryMs', 'refreshTtl', 'rate'],
    clock: true,
    lua: acquireLua,
  });
  const releaseScript = defineScript<string | null>()(redis, {
    name: 'webhookHostRelease',
    keys: ['leases', 'waiting'],
    args: ['member'],
    lua: releaseLua,
  });
  return {
    async acquire(hostname, accountId, jobId, rate) {
      const { leases, asking, waiting, rate: sent } = hostCapKeys(prefix, hostname, rate?.subscriptionId);
      const answer = await acquireScript(
        { leases, asking, waiting, sent },
        {
          member: `${accountId}\t${jobId}`,
          leaseMs,
          cap: maxInFlight,
          account: accountId,
          askedMemoryMs,
          refreshTtl: Math.random() < leasesRefreshShare ? '1' : '0',
          rate: rate?.perSecond ?? '',
        },
      );
      return answer === -1 ? hostWaitMs(Math.random()) : answer;
    },
    async release(hostname, accountId, jobId) {
      const keys = hostCapKeys(prefix, hostname);
      let woken: string | null = null;
      try {
        woken = await releaseScript(keys, { member: `${accountId}\t${jobId}` });
      } catch (error) {
        log.warn({ err: error, hostname }, 'host slot release failed; its lease will expire');
      }
      if (woken !== null) await wake(woken.slice(woken.indexOf('\t') + 1));
    },
  };
}
