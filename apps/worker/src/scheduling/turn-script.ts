/**
 * A job's account turn when the scheduler did not admit it (a retry, a new round), as a Lua function
 * the gate's admission runs, so turn, slot and claim are decided in one step. A held job waits in its
 * account's list until the round robin grants its turn.
 */
import { bucketLua, entryValue, type SchedulerKeys } from './admission-script.js';

/** How long a held job stays parked when its turn's wake-up is missed (ms); then it asks again. */
export const heldParkMs = 60_000;

/** How long a turn granted to a held job is kept for it, in ms (it is used within seconds). */
const grantTtlMs = 3_600_000;

/** The scheduler's keys the turn reads and writes, as the gate's script names them. */
export function turnKeys(keys: SchedulerKeys) {
  return { entries: keys.entries, ring: keys.ring, granted: keys.granted, quota: keys.quota };
}

/** The turn's arguments as the gate's script names them: prefixes, default quota (per shard), account and entry. */
export function turnArgs(
  keys: SchedulerKeys,
  deliveriesPerSecond: number,
  job: { accountId: string; requestId?: string | undefined },
) {
  return {
    listPrefix: keys.accountListPrefix,
    bucketPrefix: keys.bucketPrefix,
    defaultRate: deliveriesPerSecond,
    account: job.accountId,
    entry: entryValue({ ...job, held: true }),
  };
}

/**
 * Lua: `turn()` for `A.job` of `A.account` ({@link turnKeys}, {@link turnArgs}). A granted turn is
 * taken; a held entry waits on; else it runs now when its account has nothing waiting and a quota
 * token (retries count like first deliveries), or is held at its list's end for the round robin.
 * Returns 1 to run now, 0 to wait.
 */
export const turnLua = `
local quotaKey, bucketPrefix, defaultRate = K.quota, A.bucketPrefix, A.defaultRate
${bucketLua}
local function turn()
  redis.call('ZREMRANGEBYSCORE', K.granted, '-inf', now - ${grantTtlMs})
  if redis.call('ZREM', K.granted, A.job) == 1 then return 1 end
  if redis.call('HEXISTS', K.entries, A.job) == 1 then return 0 end
  local list = A.listPrefix .. A.account
  if redis.call('LLEN', list) == 0 then
    local tokens, rate = bucket(A.account)
    if tokens >= 1 then
      spend(A.account, tokens, rate, 1)
      return 1
    end
  end
  redis.call('HSET', K.entries, A.job, A.entry)
  if redis.call('RPUSH', list, A.job) == 1 then redis.call('RPUSH', K.ring, A.account) end
  return 0
end`;
