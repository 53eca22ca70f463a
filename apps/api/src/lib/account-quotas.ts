/**
 * Per-account quotas, each a default with an ACCOUNT_OVERRIDES override: subscriptions
 * (MAX_SUBSCRIPTIONS_PER_ACCOUNT) and bytes of event `data` per UTC day
 * (ACCOUNT_PAYLOAD_BYTES_PER_DAY), counted in Redis for every API instance
 * (`<prefix>:quota:payload:<account>:<YYYY-MM-DD>`, on the account's shard, kept two days); a
 * refused publish is not counted.
 */
import { batcher, defineScript, type AccountOverride, type RedisConnection } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** Seconds from `now` to the next midnight UTC, at least 1: when a day's quota starts again. */
export function secondsUntilUtcMidnight(now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}

/**
 * `K.counter`: the day's counter; `A.quota`; `A.ttlSeconds`, the counter's TTL (set when the day's
 * first charge creates it); `R`: each charge's bytes, in order. Returns 1 for each charge counted
 * and 0 for each that would have passed the quota (not counted), in order.
 */
const chargeLua = `
local used = tonumber(redis.call('GET', K.counter) or '0')
local quota = tonumber(A.quota)
local added = 0
local counted = {}
for i = 1, #R do
  local bytes = tonumber(R[i])
  if used + added + bytes > quota then
    counted[#counted + 1] = 0
  else
    added = added + bytes
    counted[#counted + 1] = 1
  end
end
if added > 0 and redis.call('INCRBY', K.counter, added) == added then
  redis.call('EXPIRE', K.counter, tonumber(A.ttlSeconds))
end
return counted`;

/** One charge waiting for its turn's script call. */
interface Charge {
  key: string;
  quota: number;
  bytes: number;
}

/** The API's per-account quotas. */
export interface AccountQuotas {
  /** Subscriptions `accountId` may have. */
  maxSubscriptions(accountId: string): number;
  /**
   * Counts `bytes` of event data against the account's quota for today (UTC).
   *
   * @throws HttpProblem 429 `quota-payload-bytes-per-day` with `Retry-After` (seconds to midnight
   *   UTC) when they would exceed it; nothing is counted then
   * @throws ioredis' errors when Redis cannot be reached (the error handler answers 503)
   */
  chargePayload(accountId: string, bytes: number, now?: Date): Promise<void>;
}

/**
 * Creates the quotas from their defaults and the overrides, counting on `redis` under
 * `prefixOf(accountId)` (the key prefix of the account's queue shard).
 */
export function createAccountQuotas(options: {
  redis: RedisConnection;
  prefixOf: (accountId: string) => string;
  maxSubscriptions: number;
  payloadBytesPerDay: number;
  overrides: ReadonlyMap<string, AccountOverride>;
}): AccountQuotas {
  const { redis, prefixOf, overrides } = options;
  const charge = defineScript<number[]>()(redis, {
    name: 'webhookChargePayload',
    keys: ['counter'],
    args: ['quota', 'ttlSeconds'],
    rest: true,
    lua: chargeLua,
  });
  /**
   * Whether each charge was counted, in order: one script call per counter (an account's day),
   * each counter's charges in the order they were made. A failed call fails its own charges only.
   */
  const chargeTurn = batcher<Charge, boolean>(async (charges) => {
    const byKey = new Map<string, number[]>();
    charges.forEach(({ key }, index) => {
      const indices = byKey.get(key);
      if (indices === undefined) byKey.set(key, [index]);
      else indices.push(index);
    });
    const results = new Array<boolean | Error>(charges.length);
    await Promise.all(
      [...byKey].map(async ([key, indices]) => {
        try {
          const counted = await charge(
            { counter: key },
            { quota: charges[indices[0]!]!.quota, ttlSeconds: 2 * 86_400 },
            indices.map((index) => charges[index]!.bytes),
          );
          indices.forEach((index, i) => (results[index] = counted[i] === 1));
        } catch (error) {
          // Returned, not thrown: the batcher would run every charge again alone, and a Redis that
          // is away would keep each publish waiting twice before its 503.
          const failed = error instanceof Error ? error : new Error(String(error));
          for (const index of indices) results[index] = failed;
        }
      }),
    );
    return results;
  });
  return {
    maxSubscriptions: (accountId) => overrides.get(accountId)?.max_subscriptions ?? options.maxSubscriptions,
    async chargePayload(accountId, bytes, now = new Date()) {
      const quota = overrides.get(accountId)?.payload_bytes_per_day ?? options.payloadBytesPerDay;
      const day = now.toISOString().slice(0, 10);
      const counted = await chargeTurn({
        key: `${prefixOf(accountId)}:quota:payload:${accountId}:${day}`,
        quota,
        bytes,
      });
      if (counted) return;
      const retryAfter = secondsUntilUtcMidnight(now);
      throw new HttpProblem(
        429,
        'quota-payload-bytes-per-day',
        `This event's ${bytes} bytes of data would pass the account's payload_bytes_per_day quota (${quota} bytes a UTC day); retry in ${retryAfter} s, or ask the operator to raise it`,
        undefined,
        { 'retry-after': String(retryAfter) },
      );
    },
  };
}
