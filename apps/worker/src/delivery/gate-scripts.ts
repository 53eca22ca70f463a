/**
 * The per-subscription gate's Lua scripts (`gate.ts`), each defined with named keys and arguments
 * (`defineScript`) on Redis' clock: admission and release. A subscription's keys are
 * `subscriptionGateKeys`', and a round's claim is under the same shard prefix (one hash slot on a
 * Cluster: the prefix's tag comes first).
 */
import { defineScript, type RedisConnection } from '@webhooks/shared';
import { turnLua } from '../scheduling/turn-script.js';

/** Gate state is forgotten a day after it was created or last refreshed, in ms. */
const stateTtlMs = 86_400_000;

/** The TTL of a subscription's leases key, in ms: a day, far past any lease. */
const leasesTtlMs = 86_400_000;

/**
 * Admission. `A.refreshTtl` '1' to refresh the leases' TTL, `A.parkedMemoryMs` after which a parked
 * entry is forgotten; `A.base` and `A.ceiling` the in-flight bounds. A job admitted takes its
 * round's claim too (`K.claim`, `SET NX PX` holding `A.claimToken`, `claim.ts`), in the same step:
 * when another run holds it, nothing is taken and the answer is 2. With `A.turn` '1' (a job the
 * account scheduler did not admit), the account's turn is asked too (`turnLua`, whose keys and
 * arguments ride along): held for it, nothing is taken and the answer is 3. Returns {admitted
 * 1|0|2|3, allowance, parked jobs ahead of this one (parked in the order they first asked), average
 * slot time ms or '', age of the oldest slot held in ms (refused by the breaker: ms until it may
 * ask again), slow-start threshold or '', breaker: '' closed, 'open', 'probing' (another job's
 * probe is in flight) or 'probe' (this job is the half-open probe, admitted whatever is in
 * flight)}.
 *
 * Expired leases (their holder died) and forgotten parked entries are cleared only when the
 * subscription is at its limit, the one case where they change the answer: an admission under the
 * limit costs four commands instead of eight. The leases' key gets its TTL ({@link leasesTtlMs})
 * when this admission creates it, and then on a share of admissions.
 */
const acquireLua = `${turnLua}
local job, leaseMs = A.job, tonumber(A.leaseMs)
local state = redis.call('HMGET', K.state, 'allowance', 'average_ms', 'threshold', 'open_until', 'probe', 'probe_until', 'parked')
local allowance = state[1] or A.base
-- 'parked' is '0' once a release found nobody parked: then no job is, and none is removed.
local mayBeParked = state[7] ~= '0'
-- The round's claim, then the account's turn when asked: 0 both taken, else the answer to refuse
-- with. A job held for its turn waits in its account's list, not in the parked line.
local function claimAndTurn()
  if not redis.call('SET', K.claim, A.claimToken, 'NX', 'PX', leaseMs) then return 2 end
  if A.turn == '1' and turn() == 0 then
    redis.call('DEL', K.claim)
    if mayBeParked then redis.call('ZREM', K.parked, job) end
    return 3
  end
  return 0
end
local function park()
  redis.call('ZADD', K.parked, 'NX', now, job)
  redis.call('PEXPIRE', K.parked, tonumber(A.parkedMemoryMs))
  if state[7] == '0' then redis.call('HSET', K.state, 'parked', '1') end
end
local average = state[2] or ''
local threshold = state[3] or ''
local openUntil = tonumber(state[4])
if openUntil then
  local waitMs, breaker = openUntil - now, 'open'
  if waitMs <= 0 then
    local probeUntil = tonumber(state[6])
    if state[5] == job or not probeUntil or probeUntil <= now then
      local refused = claimAndTurn()
      if refused > 0 then return {refused, allowance, 0, average, 0, threshold, ''} end
      redis.call('HSET', K.state, 'probe', job, 'probe_until', now + leaseMs)
      redis.call('ZADD', K.leases, now + leaseMs, job)
      redis.call('PEXPIRE', K.leases, ${leasesTtlMs})
      if mayBeParked then redis.call('ZREM', K.parked, job) end
      return {1, '1', 0, average, 0, threshold, 'probe'}
    end
    waitMs, breaker = probeUntil - now, 'probing'
  end
  park()
  return {0, allowance, 0, average, waitMs, threshold, breaker}
end
local limit = math.max(1, math.min(tonumber(A.ceiling), math.floor(tonumber(allowance))))
local held = redis.call('ZCARD', K.leases)
if held >= limit then
  redis.call('ZREMRANGEBYSCORE', K.leases, '-inf', now)
  held = redis.call('ZCARD', K.leases)
end
if held >= limit then
  redis.call('ZREMRANGEBYSCORE', K.parked, '-inf', now - tonumber(A.parkedMemoryMs))
  park()
  local ahead = redis.call('ZRANK', K.parked, job)
  local oldest = redis.call('ZRANGE', K.leases, 0, 0, 'WITHSCORES')
  return {0, allowance, ahead, average, now - (tonumber(oldest[2]) - leaseMs), threshold, ''}
end
local refused = claimAndTurn()
if refused > 0 then return {refused, allowance, 0, average, 0, threshold, ''} end
redis.call('ZADD', K.leases, now + leaseMs, job)
if held == 0 or A.refreshTtl == '1' then redis.call('PEXPIRE', K.leases, ${leasesTtlMs}) end
if mayBeParked then redis.call('ZREM', K.parked, job) end
return {1, allowance, 0, average, 0, threshold, ''}`;

/**
 * Release. `A.next` and `A.threshold` are the new allowance and slow-start threshold ('' for no
 * change), set only if the allowance is still `A.expected` (compare-and-set), so all the attempts
 * of one window change it once; an allowance back at the base is not stored. `A.outcome` is the
 * attempt's for the breaker ('1' confirmed, '0' failed, '' nothing sent), whose counts ride on the
 * same `HSET`, in a window of `A.windowMs` from `A.nowMs`.
 *
 * The round's claim (`K.claim`) is deleted while it still holds `A.claimToken`, the one its
 * admission took. Returns {the parked job first in line to promote when a slot is free, else '',
 * failed attempts in a row, attempts and failures in the breaker's window, times the breaker
 * opened (0 closed), 1 when this job was the half-open probe}. The parked line is popped before the leases are
 * counted, and not at all while the state's `parked` is '0' (this release or an earlier one found
 * it empty; a park sets it back to '1'): with nobody parked, the usual case, a release pops
 * nothing and an admission removes nothing.
 */
const releaseLua = `
redis.call('ZREM', K.leases, A.job)
if redis.call('GET', K.claim) == A.claimToken then redis.call('DEL', K.claim) end
local s = redis.call('HMGET', K.state, 'allowance', 'fails', 'win_at', 'win_n', 'win_fail', 'opens', 'probe', 'parked')
local allowance = s[1] or A.base
local changed = A.next ~= '' and allowance == A.expected
if changed then allowance = A.next end
if changed and A.threshold ~= '' then redis.call('HSET', K.state, 'threshold', A.threshold) end
if changed and tonumber(allowance) == tonumber(A.base) then
  redis.call('HDEL', K.state, 'allowance')
  changed = false
end
local fields = {'average_ms', A.average}
if changed then table.insert(fields, 'allowance') table.insert(fields, allowance) end
local fails, n, f = tonumber(s[2]) or 0, tonumber(s[4]) or 0, tonumber(s[5]) or 0
if A.outcome ~= '' then
  local now, winAt = tonumber(A.nowMs), tonumber(s[3])
  if not winAt or now - winAt >= tonumber(A.windowMs) then winAt, n, f = now, 0, 0 end
  n = n + 1
  if A.outcome == '1' then fails = 0 else fails, f = fails + 1, f + 1 end
  for _, v in ipairs({'win_at', winAt, 'win_n', n, 'win_fail', f, 'fails', fails}) do table.insert(fields, v) end
end
local probe = 0
if s[7] == A.job then
  redis.call('HDEL', K.state, 'probe', 'probe_until')
  probe = 1
end
local woken = ''
if s[8] ~= '0' then
  local head = redis.call('ZPOPMIN', K.parked)
  if #head == 0 then
    table.insert(fields, 'parked') table.insert(fields, '0')
  else
    local limit = math.max(1, math.min(tonumber(A.ceiling), math.floor(tonumber(allowance))))
    if redis.call('ZCARD', K.leases) < limit then
      woken = head[1]
    else
      redis.call('ZADD', K.parked, head[2], head[1])
      redis.call('PEXPIRE', K.parked, tonumber(A.parkedMemoryMs))
    end
  end
end
if redis.call('HSET', K.state, unpack(fields)) > 0 or A.refreshTtl == '1' then
  redis.call('PEXPIRE', K.state, ${stateTtlMs})
end
return {woken, fails, n, f, tonumber(s[6]) or 0, probe}`;

/** Defines the gate's scripts on `redis`. */
export function defineGateScripts(redis: RedisConnection) {
  return {
    acquire: defineScript<
      [0 | 1 | 2 | 3, string, number, string, number, string, '' | 'open' | 'probing' | 'probe']
    >()(redis, {
      name: 'webhookGateAcquire',
      keys: ['leases', 'parked', 'state', 'claim', 'entries', 'ring', 'granted', 'quota'],
      args: [
        'job',
        'leaseMs',
        'base',
        'parkedMemoryMs',
        'ceiling',
        'refreshTtl',
        'claimToken',
        'turn',
        'listPrefix',
        'bucketPrefix',
        'defaultRate',
        'account',
        'entry',
      ],
      clock: true,
      lua: acquireLua,
    }),
    release: defineScript<[string, number, number, number, number, number]>()(redis, {
      name: 'webhookGateRelease',
      keys: ['leases', 'state', 'parked', 'claim'],
      args: [
        'job',
        'claimToken',
        'base',
        'expected',
        'next',
        'average',
        'ceiling',
        'threshold',
        'refreshTtl',
        'parkedMemoryMs',
        'outcome',
        'nowMs',
        'windowMs',
      ],
      lua: releaseLua,
    }),
  };
}
