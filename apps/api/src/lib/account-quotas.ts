/**
 * Per-account quotas, defaults with ACCOUNT_OVERRIDES: subscriptions (MAX_SUBSCRIPTIONS_PER_ACCOUNT)
 * and event `data` bytes per UTC day (ACCOUNT_PAYLOAD_BYTES_PER_DAY), counted in Redis on the
 * account's shard (`quota:payload:<account>:<YYYY-MM-DD>`, kept two days); a refusal is not counted.
 */
import { batcher, defineScript, type AccountOverride, type RedisConnection } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** Seconds from `now` to the next midnight UTC, at least 1: when a day's quota starts again. */
export function secondsUntilUtcMidnight(now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}

/**
 * `K.counter` the day's, `A.quota`, `A.ttlSeconds` (set on creation), `R` each charge's bytes.
 * Returns, in order, 1 per charge counted, 0 per charge that would pass the quota (not counted).
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
   * Counts `bytes` of event data against today's (UTC) quota.
   * @throws HttpProblem 429 `quota-payload-bytes-per-day` with `Retry-After` (s to midnight UTC); nothing counted
   * @throws ioredis' errors when Redis cannot be reached (answered 503)
   */
  chargePayload(accountId: string, bytes: number, now?: Date): Promise<void>;
}

/** The quotas from their defaults and overrides, counted on `redis` under the account's shard prefix. */
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
  /** Whether each charge was counted, in order: one script call per counter; a failed call fails its own. */
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
          // Returned, not thrown: the batcher would rerun each charge alone, doubling the wait for 503.
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
