/**
 * Per-IP limits for what no account pays for: open routes (health, docs, portal, unknown paths) and
 * failed authentications, counted by rate-limiter-flexible in Redis (memory while it is away); over
 * one, 429 with `Retry-After`. IPv6 counts by /64; behind a proxy set TRUST_PROXY.
 */
import fp from 'fastify-plugin';
import { clientAddressKey } from '../../lib/client-address.js';
import { LRUCache } from 'lru-cache';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisConnection } from '@webhooks/shared';
import { perMinute, spend, tooMany } from '../../lib/per-minute-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every route of the account scope: counted per account, not per IP. */
    accountScoped?: boolean;
  }
}

/** Options of the per-IP limits. */
export interface IpLimitsOptions {
  /** The app's auto-pipelined counting connection. */
  redis: RedisConnection;
  /** Prefix of the counters' keys. */
  keyPrefix: string;
  /** OPEN_REQUESTS_PER_MINUTE_PER_IP. */
  openPerMinute: number;
  /** AUTH_FAILURES_PER_MINUTE_PER_IP. */
  authFailuresPerMinute: number;
}

/** What the authentication plugin asks of the limits. */
export interface AuthFailureLimit {
  /** Refuses an address that failed too often. @throws HttpProblem 429 with `Retry-After` past the limit */
  check(ip: string): Promise<void>;
  /** Counts one failed authentication of `ip`. */
  failed(ip: string): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Failed authentications per IP (auth.ts counts them). */
    authFailures: AuthFailureLimit;
  }
}

/** How long a read of an address's failure count is trusted (ms), to spare a round trip per request. */
export const failureCountTtlMs = 1_000;

/** Addresses whose failure count this process keeps at once; the least recently used go first. */
const failureCountsKept = 10_000;

/** An address's failed authentications this minute, and when (epoch ms) its minute ends. */
interface FailureCount {
  consumed: number;
  endsAt: number;
}

export default fp<IpLimitsOptions>(
  async (app, options) => {
    const open = perMinute(options.redis, `${options.keyPrefix}:ip-open`, options.openPerMinute);
    const failures = perMinute(options.redis, `${options.keyPrefix}:ip-auth`, options.authFailuresPerMinute);
    // An address's key never changes: parsed once, not on every request.
    const addressKeys = new LRUCache<string, string>({
      max: failureCountsKept,
      memoMethod: (address) => clientAddressKey(address),
    });
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config?.accountScoped) return;
      await spend(
        open(),
        addressKeys.memo(request.ip),
        `More than ${options.openPerMinute} requests a minute from this address`,
      );
    });
    const counts = new LRUCache<string, FailureCount>({ max: failureCountsKept, ttl: failureCountTtlMs });
    const countOf = (result: RateLimiterRes | null): FailureCount => ({
      consumed: result?.consumedPoints ?? 0,
      endsAt: Date.now() + (result?.msBeforeNext ?? 0),
    });
    app.decorate('authFailures', {
      async check(address) {
        const ip = addressKeys.memo(address);
        let count = counts.get(ip);
        if (count === undefined) {
          count = countOf(await failures().get(ip));
          counts.set(ip, count);
        }
        if (count.consumed >= options.authFailuresPerMinute && count.endsAt > Date.now())
          throw tooMany(
            `More than ${options.authFailuresPerMinute} failed authentications a minute from this address`,
            count.endsAt - Date.now(),
          );
      },
      async failed(address) {
        const ip = addressKeys.memo(address);
        // Past the limit, consume rejects with the count all the same.
        const result = await failures()
          .consume(ip)
          .catch((refusal: unknown) => (refusal instanceof RateLimiterRes ? refusal : undefined));
        if (result === undefined) counts.delete(ip);
        else counts.set(ip, countOf(result));
      },
    } satisfies AuthFailureLimit);
  },
  { name: 'ip-limits' },
);
