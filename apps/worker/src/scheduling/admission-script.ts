/**
 * The account scheduler's Redis side: its keys, the Lua script that schedules and admits
 * deliveries atomically, the confirmation that releases them, and a typed wrapper.
 */
import {
  defineScript,
  backLanePriority,
  prioritizedScores,
  schedulerAccountListKey,
  schedulerAccountListPrefix,
  schedulerAdmittingKey,
  schedulerEntriesKey,
  schedulerRingKey,
  type RedisConnection,
} from '@webhooks/shared';

/** The scheduler's Redis keys ({@link accountSchedulerKeys}). */
export type SchedulerKeys = ReturnType<typeof accountSchedulerKeys>;

/** Redis keys of the scheduler under `prefix`. */
export function accountSchedulerKeys(prefix: string) {
  return {
    accountList: (accountId: string) => schedulerAccountListKey(prefix, accountId),
    accountListPrefix: schedulerAccountListPrefix(prefix),
    ring: schedulerRingKey(prefix),
    entries: schedulerEntriesKey(prefix),
    admitting: schedulerAdmittingKey(prefix),
    deficit: `${prefix}:sched:deficit`,
    weight: `${prefix}:sched:weight`,
    quota: `${prefix}:sched:quota`,
    bucketPrefix: `${prefix}:sched:bucket:`,
    granted: `${prefix}:sched:granted`,
  };
}

/**
 * An admission's lane: `front` (BullMQ's wait list, taken first: quiet accounts), `back` (the
 * prioritized set: accounts over a turn's share), `stale` (re-admitted after an expired lease: a job, never inline).
 */
export const lanes = { front: '', back: 'b', stale: 's' } as const;
export type Lane = (typeof lanes)[keyof typeof lanes];

/** First character of an entry that may be attempted inline (its row is new); account ids hold no control characters. */
export const inlineMark = '\u0001';

/** First character of an entry for a job BullMQ holds already (a retry, a new round), delayed until its turn. */
export const heldMark = '\u0002';

/** Lua: `inChunks(list, fn)` calls `fn` on slices of at most 1,000 values (`unpack` takes a few thousand at most). */
const inChunksLua = `
local function inChunks(list, fn)
  for first = 1, #list, 1000 do
    local chunk = {}
    for i = first, math.min(#list, first + 999) do chunk[#chunk + 1] = list[i] end
    fn(chunk)
  end
end`;

/**
 * Lua: an account's quota token bucket: `bucket(account)` returns tokens and rate, `spend(account, tokens,
 * rate, n)` takes `n`. Needs `quotaKey`, `bucketPrefix`, `defaultRate` and `now` (ms) in scope.
 */
export const bucketLua = `
local function bucket(account)
  local rate = tonumber(redis.call('HGET', quotaKey, account) or defaultRate)
  local value = redis.call('GET', bucketPrefix .. account)
  local tokens = rate
  if value then
    local sep = string.find(value, ':')
    tokens = math.min(rate, tonumber(string.sub(value, 1, sep - 1)) + (now - tonumber(string.sub(value, sep + 1))) * rate / 1000)
  end
  return tokens, rate
end
local function spend(account, tokens, rate, n)
  local left = tokens - n
  if left < rate then
    redis.call('SET', bucketPrefix .. account, tostring(left) .. ':' .. now, 'PX', math.ceil((rate - left) * 1000 / rate))
  end
end`;

/** The prioritized set's score range of the back lane's jobs (recovered rounds are outside it). */
const backLaneScores = prioritizedScores(backLanePriority);

/**
 * The admission script. KEYS: {@link accountSchedulerKeys}, BullMQ's wait list and prioritized set.
 * ARGV: list and bucket prefixes, queue target, quantum, lease (ms), default rate, the most to admit
 * (the caller's inline room); `R`: (job id, account, entry value) triples to schedule first. Returns
 * {(job id, entry value, lane) triples, accounts still waiting}.
 *
 * A quiet account (nothing waiting, at most a turn's share) is admitted at once into the front lane
 * while it has room and tokens; others join their account's list: FQ-CoDel's "new flows first" (RFC
 * 8290 §4.2). Admission is deficit round robin (Shreedhar and Varghese, 1996): each turn adds quantum ×
 * weight to the deficit and admits that many of the oldest entries as tokens allow. It admits when the
 * queue (both lanes and unconfirmed admissions) is at most half the target, filling it up. Accounts over
 * a share go to the back lane; entries behind {@link heldMark} are granted their turn; calls that
 * schedule nothing re-admit expired leases in the stale lane.
 */
const admitLua = `${inChunksLua}
local ringKey, entriesKey, admittingKey, deficitKey, weightKey = K.ring, K.entries, K.admitting, K.deficit, K.weight
local waitKey, quotaKey, prioritizedKey, grantedKey = K.wait, K.quota, K.prioritized, K.granted
local listPrefix, bucketPrefix, defaultRate = A.listPrefix, A.bucketPrefix, A.deliveriesPerSecond
local target, quantum, lease, limit = tonumber(A.target), tonumber(A.quantum), tonumber(A.leaseMs), tonumber(A.limit)
local out = {}
${bucketLua}
local function grantIfHeld(job, entry)
  if entry and string.sub(entry, 1, 1) == '${heldMark}' then redis.call('ZADD', grantedKey, now, job) end
end
-- Admits jobs of an account into a lane; known: their entry values, when the caller has them.
local function take(account, jobs, tokens, rate, lane, known)
  local taken = 0
  inChunks(jobs, function(chunk)
    local values = known or redis.call('HMGET', entriesKey, unpack(chunk))
    local offset = known and taken or 0
    local leases = {}
    for i, job in ipairs(chunk) do
      local value = values[offset + i]
      grantIfHeld(job, value)
      out[#out + 1] = job
      out[#out + 1] = value or (account .. '\\t')
      out[#out + 1] = lane
      leases[#leases + 1] = now + lease
      leases[#leases + 1] = job
    end
    taken = taken + #chunk
    redis.call('ZADD', admittingKey, unpack(leases))
  end)
  spend(account, tokens, rate, #jobs)
end
local arrived, arrivedValues, byAccount = {}, {}, {}
if #R > 0 then
  local asked = {}
  for i = 1, #R, 3 do asked[#asked + 1] = R[i] end
  local held = redis.call('HMGET', entriesKey, unpack(asked))
  local fields, seen, accounts = {}, {}, {}
  for k, job in ipairs(asked) do
    if not held[k] and not seen[job] then
      seen[job] = true
      local account = R[3 * (k - 1) + 2]
      local value = R[3 * (k - 1) + 3]
      fields[#fields + 1] = job
      fields[#fields + 1] = value
      if not byAccount[account] then
        byAccount[account] = {}
        arrivedValues[account] = {}
        accounts[#accounts + 1] = account
      end
      table.insert(byAccount[account], job)
      table.insert(arrivedValues[account], value)
    end
  end
  if #fields > 0 then redis.call('HSET', entriesKey, unpack(fields)) end
  for _, account in ipairs(accounts) do
    local list = listPrefix .. account
    if redis.call('EXISTS', list) == 0 then
      arrived[#arrived + 1] = account
    else
      redis.call('RPUSH', list, unpack(byAccount[account]))
    end
  end
end
-- An account that had nothing waiting goes to the front lane at once when it may; else its
-- entries wait in its list, and it joins the ring.
local roomFront = #arrived > 0 and target - redis.call('LLEN', waitKey) or 0
for _, account in ipairs(arrived) do
  local jobs = byAccount[account]
  local waiting = #jobs
  local share = quantum * tonumber(redis.call('HGET', weightKey, account) or '1')
  local admitted = false
  if waiting <= share and waiting <= roomFront then
    local tokens, rate = bucket(account)
    if tokens >= waiting then
      take(account, jobs, tokens, rate, '', arrivedValues[account])
      roomFront = roomFront - waiting
      admitted = true
    end
  end
  if not admitted then
    redis.call('RPUSH', listPrefix .. account, unpack(jobs))
    redis.call('RPUSH', ringKey, account)
  end
end
-- Leases that ended unconfirmed are taken again by the admissions that schedule nothing (every
-- process's background admission), so that a fan-out's call pays nothing for them.
local stale = #R > 0 and {} or redis.call('ZRANGEBYSCORE', admittingKey, '-inf', now, 'LIMIT', 0, target)
for _, job in ipairs(stale) do
  local entry = redis.call('HGET', entriesKey, job)
  if entry then
    grantIfHeld(job, entry)
    redis.call('ZADD', admittingKey, now + lease, job)
    out[#out + 1] = job
    out[#out + 1] = entry
    out[#out + 1] = 's'
  else
    redis.call('ZREM', admittingKey, job)
  end
end
local waitingAccounts = redis.call('LLEN', ringKey)
if waitingAccounts == 0 then return {out, 0} end
local room = target - redis.call('LLEN', waitKey) - redis.call('ZCOUNT', prioritizedKey, ${backLaneScores[0]}, ${backLaneScores[1]}) - redis.call('ZCARD', admittingKey)
if room * 2 < target then return {out, waitingAccounts} end
room = math.min(room, limit)
local progressed = true
while room > 0 and progressed do
  progressed = false
  local turns = redis.call('LLEN', ringKey)
  while turns > 0 and room > 0 do
    turns = turns - 1
    local account = redis.call('LPOP', ringKey)
    local list = listPrefix .. account
    local tokens, rate = bucket(account)
    local deficit = tonumber(redis.call('HGET', deficitKey, account) or '0')
    local share = quantum * tonumber(redis.call('HGET', weightKey, account) or '1')
    local lane = 'b'
    if redis.call('LLEN', list) <= share then lane = '' end
    local jobs = {}
    if tokens >= 1 then
      deficit = deficit + share
      jobs = redis.call('LPOP', list, math.min(room, math.floor(tokens), math.max(1, math.floor(deficit)))) or {}
    end
    take(account, jobs, tokens, rate, lane)
    if #jobs > 0 then progressed = true end
    room = room - #jobs
    if redis.call('LLEN', list) == 0 then
      redis.call('HDEL', deficitKey, account)
    else
      -- What a turn cut short by the room or the quota leaves is owed, up to one more turn's share.
      redis.call('HSET', deficitKey, account, tostring(math.min(deficit - #jobs, share)))
      redis.call('RPUSH', ringKey, account)
    end
  end
end
return {out, redis.call('LLEN', ringKey)}`;

/** A delivery to schedule: its job id, its account, and its entry value (`sched:entries`). */
export interface ScheduledEntry {
  jobId: string;
  accountId: string;
  /** `<account>\t<request id>`, behind {@link inlineMark} when it may be attempted inline. */
  entry: string;
}

/** The entry value of a scheduled delivery (`sched:entries`). */
export function entryValue(delivery: {
  accountId: string;
  requestId?: string | undefined;
  created?: boolean;
  held?: boolean;
}): string {
  const value = `${delivery.accountId}\t${delivery.requestId ?? ''}`;
  if (delivery.held === true) return heldMark + value;
  return delivery.created === true ? inlineMark + value : value;
}

/** What an entry value says: the delivery's account and request id, and whether its row was new. */
export function readEntry(entry: string): {
  accountId: string;
  requestId?: string;
  created: boolean;
  held: boolean;
} {
  const tab = entry.indexOf('\t');
  const requestId = entry.slice(tab + 1);
  const marked = entry.startsWith(inlineMark) || entry.startsWith(heldMark);
  return {
    accountId: entry.slice(marked ? 1 : 0, tab),
    ...(requestId === '' ? {} : { requestId }),
    created: entry.startsWith(inlineMark),
    held: entry.startsWith(heldMark),
  };
}

/** A delivery an admission took, in the lane it goes to. */
export interface Admitted {
  jobId: string;
  entry: string;
  lane: Lane;
}

/** What the admission script needs beside its scheduler's keys. */
export interface AdmissionParams {
  /** BullMQ's keys of the `deliveries` queue: its wait list (front lane) and prioritized set (back lane). */
  queueKeys: { wait: string; prioritized: string };
  /** DELIVERY_QUEUE_TARGET. */
  queueTarget: number;
  /** Deliveries an account of weight 1 is admitted per turn. */
  quantum: number;
  /** How long an admitted entry may wait for its job before it is admitted again, in ms. */
  leaseMs: number;
  /** ACCOUNT_DELIVERIES_PER_SECOND. */
  deliveriesPerSecond: number;
}

export interface AdmissionScript {
  /**
   * Schedules `scheduled` (may be empty), then admits at most `limit` by the round robin.
   * @throws ioredis' errors when Redis cannot be reached
   */
  admit(
    scheduled: readonly ScheduledEntry[],
    limit: number,
  ): Promise<{ admitted: Admitted[]; waitingAccounts: number }>;
  /** Releases the entries of `jobIds`, whose BullMQ jobs exist now. @throws ioredis' errors */
  confirm(jobIds: readonly string[]): Promise<void>;
}

/** Registers the scripts on `redis` and returns them, for the scheduler of `keys`. */
export function createAdmissionScript(
  redis: RedisConnection,
  keys: SchedulerKeys,
  params: AdmissionParams,
): AdmissionScript {
  const admitScript = defineScript<[string[], number]>()(redis, {
    name: 'webhookAdmit',
    keys: ['ring', 'entries', 'admitting', 'deficit', 'weight', 'wait', 'quota', 'prioritized', 'granted'],
    args: ['listPrefix', 'target', 'quantum', 'leaseMs', 'deliveriesPerSecond', 'bucketPrefix', 'limit'],
    rest: true,
    clock: true,
    lua: admitLua,
  });
  return {
    async admit(scheduled, limit) {
      const [flat, waitingAccounts] = await admitScript(
        {
          ring: keys.ring,
          entries: keys.entries,
          admitting: keys.admitting,
          deficit: keys.deficit,
          weight: keys.weight,
          wait: params.queueKeys.wait,
          quota: keys.quota,
          prioritized: params.queueKeys.prioritized,
          granted: keys.granted,
        },
        {
          listPrefix: keys.accountListPrefix,
          target: params.queueTarget,
          quantum: params.quantum,
          leaseMs: params.leaseMs,
          deliveriesPerSecond: params.deliveriesPerSecond,
          bucketPrefix: keys.bucketPrefix,
          limit,
        },
        scheduled.flatMap(({ jobId, accountId, entry }) => [jobId, accountId, entry]),
      );
      const admitted: Admitted[] = [];
      for (let i = 0; i < flat.length; i += 3)
        admitted.push({ jobId: flat[i]!, entry: flat[i + 1]!, lane: flat[i + 2] as Lane });
      return { admitted, waitingAccounts };
    },
    async confirm(jobIds) {
      if (jobIds.length === 0) return;
      // Entries first: an admission left without its entry is dropped when its lease ends, while an
      // entry left without its admission would hold its job id for ever. One write, no script.
      const answers = await redis
        .pipeline()
        .hdel(keys.entries, ...jobIds)
        .zrem(keys.admitting, ...jobIds)
        .exec();
      for (const [error] of answers ?? []) if (error) throw error;
    },
  };
}
