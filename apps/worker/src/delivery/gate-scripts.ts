/**
 * The gate's admission and release scripts (`gate.ts`), on Redis' clock. One admission takes, all or
 * nothing, the subscription's slot, the round's claim, the turn when asked and the host's share with
 * `rate_limit`; one release gives them back. Host keys share the subscription's shard (one Cluster slot).
 */
import { defineScript, redisNowLua, type RedisConnection } from '@webhooks/shared';
import { turnLua } from '../scheduling/turn-script.js';

/** Gate state is forgotten a day after it was created or last refreshed, in ms. */
const stateTtlMs = 86_400_000;

/** TTL of a leases key (ms): a day, far past any lease; set on creation and on a share of admissions. */
const leasesTtlMs = 86_400_000;

/** The `rate_limit` window (ms): a second and 100 ms, so jitter cannot fit `rate_limit + 1` in a receiver's second. */
export const rateWindowMs = 1_100;

/** Lua: `heldByAccount(now)`: account → live host slots, from the leases (`<account>\t<job id>`); contended paths only. */
const countHeldLua = `
local function heldByAccount(now)
  local counts = {}
  for _, holder in ipairs(redis.call('ZRANGEBYSCORE', K.hostLeases, now, '+inf')) do
    local owner = string.sub(holder, 1, string.find(holder, '\t', 1, true) - 1)
    counts[owner] = (counts[owner] or 0) + 1
  end
  return counts
end`;

/**
 * Lua: the host's share, `hostRefusal()` then `takeHost()`. `K.hostLeases` member → lease end,
 * `K.hostAsking` account → last refusal, `K.hostWaiting` member → first wait (ms); `K.sent`: the
 * subscription's attempts in {@link rateWindowMs}, counted when `A.rate` is set. `hostRefusal()`
 * returns 0 to admit (writing nothing), -1 over the cap or share (recording the waiter), or the ms
 * until the rate window has room.
 *
 * Max-min fairness: each account's share is the cap over the accounts holding or refused lately.
 * Under its share an account takes a free slot; at or over it, only the free slots beyond those the
 * accounts refused below their shares still lack, so slots are used whoever asks and a flood yields
 * them to a newcomer. Expired leases clear only at the cap.
 */
const hostShareLua = `${countHeldLua}
local hostHeld, hostRenews, hostAnyAsking = 0, false, false
local function hostRefusal()
  local member, cap, account = A.hostMember, tonumber(A.hostCap), A.hostAccount
  local rate = tonumber(A.rate)
  if rate then
    redis.call('ZREMRANGEBYSCORE', K.sent, '-inf', now - ${rateWindowMs})
    if redis.call('ZCARD', K.sent) >= rate then
      local oldest = redis.call('ZRANGE', K.sent, 0, 0, 'WITHSCORES')
      return math.max(1, tonumber(oldest[2]) + ${rateWindowMs} - now)
    end
  end
  local held = redis.call('ZCARD', K.hostLeases)
  if held >= cap then
    if redis.call('ZSCORE', K.hostLeases, member) then
      hostRenews = true
      return 0
    end
    held = held - redis.call('ZREMRANGEBYSCORE', K.hostLeases, '-inf', now)
  end
  hostHeld = held
  -- Shares matter only while another account waits: the usual admission reads one more key.
  local askers = {}
  local othersAsking = false
  hostAnyAsking = redis.call('EXISTS', K.hostAsking) == 1
  if hostAnyAsking then
    redis.call('ZREMRANGEBYSCORE', K.hostAsking, '-inf', now - tonumber(A.askedMemoryMs))
    for _, asker in ipairs(redis.call('ZRANGE', K.hostAsking, 0, -1)) do
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
    local share = math.max(1, math.floor(cap / sharing))
    if mine >= share then
      local needed = 0
      for _, asker in ipairs(askers) do needed = needed + math.max(0, share - (counts[asker] or 0)) end
      admitted = cap - held > needed
    end
  end
  if admitted then return 0 end
  redis.call('ZADD', K.hostAsking, now, account)
  redis.call('PEXPIRE', K.hostAsking, tonumber(A.askedMemoryMs))
  redis.call('ZADD', K.hostWaiting, 'NX', now, member)
  redis.call('PEXPIRE', K.hostWaiting, tonumber(A.leaseMs))
  return -1
end
local function takeHost()
  local member = A.hostMember
  redis.call('ZADD', K.hostLeases, now + tonumber(A.leaseMs), member)
  if not hostRenews then
    -- No lease left (none held, or the expired ones cleared at the cap): this ZADD made the key.
    if hostHeld == 0 or A.refreshTtl == '1' then redis.call('PEXPIRE', K.hostLeases, ${leasesTtlMs}) end
    if hostAnyAsking then
      redis.call('ZREM', K.hostAsking, A.hostAccount)
      redis.call('ZREM', K.hostWaiting, member)
    end
  end
  if tonumber(A.rate) then
    redis.call('ZADD', K.sent, now, member .. '@' .. now)
    redis.call('PEXPIRE', K.sent, ${rateWindowMs})
  end
end`;

/** Most waiting attempts a host's release looks at to choose the one it wakes. */
const wakeCandidates = 32;

/**
 * Lua: `releaseHost()` gives `A.hostMember`'s slot back once and returns the waiter to wake (or ''):
 * of the oldest {@link wakeCandidates}, the oldest of the account holding fewest, under its share first.
 */
const hostReleaseLua = `${countHeldLua}
local function releaseHost()
  if redis.call('ZREM', K.hostLeases, A.hostMember) == 0 then return '' end
  local waiters = redis.call('ZRANGE', K.hostWaiting, 0, ${wakeCandidates - 1})
  if #waiters == 0 then return '' end
  ${redisNowLua}
  local counts = heldByAccount(now)
  local best, fewest = '', nil
  for _, waiter in ipairs(waiters) do
    local held = counts[string.sub(waiter, 1, string.find(waiter, '\t', 1, true) - 1)] or 0
    if fewest == nil or held < fewest then best, fewest = waiter, held end
    if held == 0 then break end
  end
  redis.call('ZREM', K.hostWaiting, best)
  return best
end`;

/**
 * Admission. `A.slot` '1': the subscription's slot (`A.base`/`A.ceiling` bounds, `A.refreshTtl`,
 * `A.parkedMemoryMs`) and the round's claim (`SET NX PX` of `A.claimToken`; held by another run: 2).
 * `A.turn` '1': the account's turn too (`turnLua`; held: 3). `A.hostMember` set: the host's share
 * under `A.hostCap` and `rate_limit` (refused: 4, nothing taken). `A.slot` '0': the host only.
 * Returns {1|0|2|3|4, allowance, parked ahead, average ms or '', oldest slot's age ms (breaker: ms
 * until it may ask; host: -1 full, else ms until the rate window has room), threshold or '',
 * breaker: '' closed, 'open', 'probing' (another's probe in flight) or 'probe' (this job)}.
 * Expired leases and forgotten parked entries are cleared only at the limit, where they matter.
 */
const acquireLua = `${turnLua}${hostShareLua}
local job, leaseMs = A.job, tonumber(A.leaseMs)
local asksHost = A.hostMember ~= ''
if A.slot == '0' then
  local hostWait = hostRefusal()
  if hostWait ~= 0 then return {4, '', 0, '', hostWait, '', ''} end
  takeHost()
  return {1, '', 0, '', 0, '', ''}
end
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
-- The host's share first, then the claim and the turn, then the host's writes: all or nothing.
local hostWait = 0
local function admits()
  if asksHost then
    hostWait = hostRefusal()
    if hostWait ~= 0 then
      if mayBeParked then redis.call('ZREM', K.parked, job) end
      return 4
    end
  end
  local refused = claimAndTurn()
  if refused == 0 and asksHost then takeHost() end
  return refused
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
      local refused = admits()
      if refused > 0 then return {refused, allowance, 0, average, hostWait, threshold, ''} end
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
local refused = admits()
if refused > 0 then return {refused, allowance, 0, average, hostWait, threshold, ''} end
redis.call('ZADD', K.leases, now + leaseMs, job)
if held == 0 or A.refreshTtl == '1' then redis.call('PEXPIRE', K.leases, ${leasesTtlMs}) end
if mayBeParked then redis.call('ZREM', K.parked, job) end
return {1, allowance, 0, average, 0, threshold, ''}`;

/**
 * Release. `A.next`/`A.threshold` are set only if the allowance is still `A.expected`
 * (compare-and-set: one change per window); the base is not stored. `A.outcome` ('1' confirmed, '0'
 * failed, '' nothing sent) feeds the breaker's counts in a window of `A.windowMs` from `A.nowMs`.
 * The claim is deleted while it holds `A.claimToken`. Returns {the parked jobs to promote, oldest
 * first: the first when a slot is free, and with a raised limit as many as it has free slots;
 * failures in a row, window attempts and failures, times opened (0 closed), 1 if this was the probe,
 * host waiter to wake or ''}. The parked line is popped only while `parked` is not '0' (nobody
 * parked, the usual case, costs nothing). `A.hostMember`: the host's slot too; `A.slot` '0': only that.
 */
const releaseLua = `${hostReleaseLua}
local hostWoken = ''
if A.hostMember ~= '' then hostWoken = releaseHost() end
if A.slot == '0' then return {{}, 0, 0, 0, 0, 0, hostWoken} end
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
local woken = {}
if s[8] ~= '0' then
  local head = redis.call('ZPOPMIN', K.parked)
  if #head == 0 then
    table.insert(fields, 'parked') table.insert(fields, '0')
  else
    local limit = math.max(1, math.min(tonumber(A.ceiling), math.floor(tonumber(allowance))))
    local free = limit - redis.call('ZCARD', K.leases)
    if free > 0 then
      woken[1] = head[1]
      -- A raised limit frees more than this slot: the next parked go too.
      if changed and free > 1 then
        local more = redis.call('ZPOPMIN', K.parked, free - 1)
        for i = 1, #more, 2 do woken[#woken + 1] = more[i] end
      end
    else
      redis.call('ZADD', K.parked, head[2], head[1])
      redis.call('PEXPIRE', K.parked, tonumber(A.parkedMemoryMs))
    end
  end
end
if redis.call('HSET', K.state, unpack(fields)) > 0 or A.refreshTtl == '1' then
  redis.call('PEXPIRE', K.state, ${stateTtlMs})
end
return {woken, fails, n, f, tonumber(s[6]) or 0, probe, hostWoken}`;

/** The admission's keys and arguments that only its subscription part reads. */
const slotKeys = ['leases', 'parked', 'state', 'claim', 'entries', 'ring', 'granted', 'quota'] as const;
const slotArgs = [
  'base',
  'parkedMemoryMs',
  'ceiling',
  'claimToken',
  'turn',
  'listPrefix',
  'bucketPrefix',
  'defaultRate',
  'account',
  'entry',
] as const;

/** The release's arguments that only its subscription part reads. */
const slotReleaseArgs = [
  'claimToken',
  'base',
  'expected',
  'next',
  'average',
  'ceiling',
  'threshold',
  'parkedMemoryMs',
  'outcome',
  'nowMs',
  'windowMs',
] as const;

const blank = <N extends string>(names: readonly N[]) =>
  Object.fromEntries(names.map((name) => [name, ''])) as Record<N, ''>;

/** The subscription part's arguments, blank: an admission or a release of a host's slot alone. */
export const noSlot = { args: blank(slotArgs), releaseArgs: blank(slotReleaseArgs) };

/** Defines the admission's and the release's scripts on `redis`. */
export function defineGateScripts(redis: RedisConnection) {
  return {
    acquire: defineScript<
      [0 | 1 | 2 | 3 | 4, string, number, string, number, string, '' | 'open' | 'probing' | 'probe']
    >()(redis, {
      name: 'webhookGateAcquire',
      keys: [...slotKeys, 'hostLeases', 'hostAsking', 'hostWaiting', 'sent'],
      args: [
        ...slotArgs,
        ...(['slot', 'job', 'leaseMs', 'refreshTtl', 'hostMember', 'hostAccount', 'hostCap'] as const),
        ...(['askedMemoryMs', 'rate'] as const),
      ],
      clock: true,
      lua: acquireLua,
    }),
    release: defineScript<[string[], number, number, number, number, number, string]>()(redis, {
      name: 'webhookGateRelease',
      keys: ['leases', 'state', 'parked', 'claim', 'hostLeases', 'hostWaiting'],
      args: [...slotReleaseArgs, 'slot', 'job', 'refreshTtl', 'hostMember'],
      lua: releaseLua,
    }),
  };
}
