/**
 * Counts for the API's own limits (per client address, a recovery's pace): rate-limiter-flexible on
 * Redis, with a memory count while Redis is away, so an outage never lifts a limit. Over: 429 with `Retry-After` (s).
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { redisConnectionDown, type RedisConnection } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** One per-minute limit, on Redis with a memory fallback for outages. */
export function perMinute(redis: RedisConnection, keyPrefix: string, points: number) {
  return perWindow(redis, keyPrefix, points, 60);
}

/** A limit of `points` per `seconds` (fixed window from the first point), on Redis, in memory during outages. */
export function perWindow(redis: RedisConnection, keyPrefix: string, points: number, seconds: number) {
  const memory = new RateLimiterMemory({ points, duration: seconds });
  const shared = new RateLimiterRedis({
    storeClient: redis,
    points,
    duration: seconds,
    keyPrefix,
    insuranceLimiter: memory,
  });
  // While the connection is known down, memory answers at once, not after the command timeout.
  return () => (redisConnectionDown(redis) ? memory : shared);
}

/** The 429 of a limit, with the wait in whole seconds. */
export function tooMany(what: string, msBeforeNext: number): HttpProblem {
  const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new HttpProblem(429, 'rate-limited', `${what}; retry in ${seconds} s`, undefined, {
    'retry-after': String(seconds),
  });
}

/** Consumes `points` (default 1) of `key`'s count, counted either way; throws `what`'s 429 when over. */
export async function spend(
  limiter: RateLimiterRedis | RateLimiterMemory,
  key: string,
  what: string,
  points = 1,
) {
  try {
    await limiter.consume(key, points);
  } catch (refusal) {
    if (refusal instanceof RateLimiterRes) throw tooMany(what, refusal.msBeforeNext);
    throw refusal;
  }
}
