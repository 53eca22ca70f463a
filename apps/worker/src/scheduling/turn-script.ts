/**
 * The account's turn of a delivery job the scheduler did not admit (a retry, a new round), as a
 * Lua function that the subscription gate's admission script runs (`delivery/gate-scripts.ts`), so
 * that the job's turn, its subscription's slot and its round's claim are decided in one step. A
 * job held for its turn waits in its account's list, and `admission-script.ts` grants the turn
 * when the round robin admits it.
 */
import { bucketLua, entryValue, type SchedulerKeys } from './admission-script.js';

/**
 * How long a held job stays parked when its turn's wake-up is missed, in ms: it then asks again,
 * and waits again while its entry is still held.
 */
export const heldParkMs = 60_000;

/** How long a turn granted to a held job is kept for it, in ms (it is used within seconds). */
const grantTtlMs = 3_600_000;

/** The scheduler's keys the turn reads and writes, as the gate's script names them. */
export function turnKeys(keys: SchedulerKeys) {
  return { entries: keys.entries, ring: keys.ring, granted: keys.granted, quota: keys.quota };
}

/**
 * The turn's arguments, as the gate's script names them: `keys`' list and bucket prefixes, the
 * default quota (`deliveriesPerSecond`, ACCOUNT_DELIVERIES_PER_SECOND per shard), and the job's
 * account and entry value (behind `heldMark`).
 */
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
 * Lua: `turn()` for job `A.job` of account `A.account`, with the keys of {@link turnKeys} and the
 * arguments of {@link turnArgs} in `K` and `A`. A job whose turn an admission granted takes it;
 * one whose entry is held waits on. Otherwise it runs now when its account has nothing waiting and
 * a token of its quota left (taken: retries count against ACCOUNT_DELIVERIES_PER_SECOND as first
 * deliveries do); else it is held at the end of its account's list, and the round robin grants its
 * turn as any other entry's. Returns 1 when the job runs now, 0 when it waits.
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
