/**
 * The quotas the API applies per account, each with a default and a per-account override
 * (ACCOUNT_OVERRIDES): subscriptions an account may have (MAX_SUBSCRIPTIONS_PER_ACCOUNT), and bytes
 * of event `data` accepted per UTC day (ACCOUNT_PAYLOAD_BYTES_PER_DAY). Requests a minute are the
 * rate limit's (`plugins/rate-limit.ts`); deliveries a second are the worker's account scheduler's.
 *
 * The day's bytes are counted in Redis (`<prefix>:quota:payload:<account>:<YYYY-MM-DD>`, under the
 * account's queue shard, kept two days), shared by every API instance; a publish the quota refuses
 * is not counted.
 */
import type { AccountOverride, RedisConnection } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** Seconds from `now` to the next midnight UTC, at least 1: when a day's quota starts again. */
export function secondsUntilUtcMidnight(now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}

/** KEYS: the day's counter. ARGV: bytes, quota, ttl s. Returns the new count, or -1 when over. */
const chargeLua = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return -1 end
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return count`;

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
  redis.defineCommand('webhookChargePayload', { numberOfKeys: 1, lua: chargeLua });
  const charge = (
    redis as unknown as { webhookChargePayload(...args: Array<string | number>): Promise<number> }
  ).webhookChargePayload;
  return {
    maxSubscriptions: (accountId) => overrides.get(accountId)?.max_subscriptions ?? options.maxSubscriptions,
    async chargePayload(accountId, bytes, now = new Date()) {
      const quota = overrides.get(accountId)?.payload_bytes_per_day ?? options.payloadBytesPerDay;
      const day = now.toISOString().slice(0, 10);
      const count = await charge.call(
        redis,
        `${prefixOf(accountId)}:quota:payload:${accountId}:${day}`,
        bytes,
        quota,
        2 * 86_400,
      );
      if (count >= 0) return;
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
