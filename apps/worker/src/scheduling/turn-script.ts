/**
 * The account scheduler's turn script, for a delivery job it did not admit (a retry, a new
 * round): the job runs now, or is held in its account's list until the round robin grants its
 * turn (`admission-script.ts` grants it when it admits the held entry).
 */
import { defineScript, type RedisConnection } from '@webhooks/shared';
import { bucketLua, entryValue, type SchedulerKeys } from './admission-script.js';

/**
 * How long a held job stays parked when its turn's wake-up is missed, in ms: it then asks again,
 * and waits again while its entry is still held.
 */
export const heldParkMs = 60_000;

/** How long a turn granted to a held job is kept for it, in ms (it is used within seconds). */
const grantTtlMs = 3_600_000;

/**
 * The turn script, for a job the scheduler did not admit (a retry, a new round): `A.entry` is its
 * entry value (behind `heldMark`), `A.defaultRate` the default deliveries a second.
 *
 * A job whose turn an admission granted takes it. One whose entry is held waits on. Otherwise the
 * job runs now when its account has nothing waiting and a token of its quota left (the token is
 * taken: retries count against ACCOUNT_DELIVERIES_PER_SECOND as first deliveries do); else it is
 * held at the end of its account's list, and the round robin grants its turn as any other entry's.
 * Returns 1 when the job runs now, 0 when it waits.
 */
const turnLua = `
local entriesKey, ringKey, grantedKey, quotaKey = K.entries, K.ring, K.granted, K.quota
local listPrefix, bucketPrefix, defaultRate = A.listPrefix, A.bucketPrefix, A.defaultRate
local job, account, entry = A.job, A.account, A.entry
${bucketLua}
redis.call('ZREMRANGEBYSCORE', grantedKey, '-inf', now - ${grantTtlMs})
if redis.call('ZREM', grantedKey, job) == 1 then return 1 end
if redis.call('HEXISTS', entriesKey, job) == 1 then return 0 end
local list = listPrefix .. account
if redis.call('LLEN', list) == 0 then
  local tokens, rate = bucket(account)
  if tokens >= 1 then
    spend(account, tokens, rate, 1)
    return 1
  end
end
redis.call('HSET', entriesKey, job, entry)
if redis.call('RPUSH', list, job) == 1 then redis.call('RPUSH', ringKey, account) end
return 0`;

/** The turn script, called by name. */
export interface TurnScript {
  /**
   * Whether a job the scheduler did not admit runs now (`turnLua`); when not, it is held for its
   * account's turn.
   *
   * @throws ioredis' errors when Redis cannot be reached
   */
  turn(job: { jobId: string; accountId: string; requestId?: string }): Promise<boolean>;
}

/**
 * Registers the turn script on `redis` for the scheduler of `keys`, whose accounts' default quota
 * is `deliveriesPerSecond` (ACCOUNT_DELIVERIES_PER_SECOND, per shard).
 */
export function createTurnScript(
  redis: RedisConnection,
  keys: SchedulerKeys,
  deliveriesPerSecond: number,
): TurnScript {
  const script = defineScript<number>()(redis, {
    name: 'webhookTurn',
    keys: ['entries', 'ring', 'granted', 'quota'],
    args: ['listPrefix', 'bucketPrefix', 'defaultRate', 'job', 'account', 'entry'],
    clock: true,
    lua: turnLua,
  });
  return {
    async turn({ jobId, accountId, requestId }) {
      const runs = await script(keys, {
        listPrefix: keys.accountListPrefix,
        bucketPrefix: keys.bucketPrefix,
        defaultRate: deliveriesPerSecond,
        job: jobId,
        account: accountId,
        entry: entryValue({ accountId, ...(requestId === undefined ? {} : { requestId }), held: true }),
      });
      return runs === 1;
    },
  };
}
