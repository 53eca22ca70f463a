/**
 * Per-account rate limiting (RATE_LIMIT_PER_MINUTE) with @fastify/rate-limit on a Redis count all
 * instances share; over it, 429 with `Retry-After`. When a count fails, a read passes uncounted and a
 * write answers 503 with `Retry-After` (fail closed for what changes state).
 */
import fp from 'fastify-plugin';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyBaseLogger, RouteOptions } from 'fastify';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { redisConnectionDown, type RedisConnection } from '@webhooks/shared';
import { serviceUnavailable } from '../../lib/infrastructure-error.js';
import { HttpProblem } from '../../lib/problem.js';

/** Methods that change nothing: they pass uncounted while Redis cannot count them. */
const readMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The 503 of a write the rate limit could not count. */
const uncounted = () =>
  serviceUnavailable(
    'Redis is unavailable, so the rate limit cannot count this request; nothing was accepted or changed. Retry later.',
  );

/** Whether a route changes state (any of its methods is not a read). */
export function isWriteRoute(method: RouteOptions['method']): boolean {
  return (Array.isArray(method) ? method : [method]).some((m) => !readMethods.has(m.toUpperCase()));
}

/** Options of the rate-limit plugin. */
export interface RateLimitOptions {
  /** RATE_LIMIT_PER_MINUTE. */
  max: number;
  /** Prefix of an account's counter's Redis key: its queue shard's, so that accounts spread. */
  keyPrefixOf: (accountId: string) => string;
  /** The counting connection the counts go through; the app owns and closes it. */
  redis: RedisConnection;
}

/**
 * The plugin's store, over rate-limiter-flexible: one count per account for all routes (the
 * plugin's own store gives routes with own settings their own counter, multiplying the limit). A
 * failed count, whatever Redis says, is the 503 of an uncounted request.
 */
function accountCountStore(limiter: RateLimiterRedis, log: FastifyBaseLogger): FastifyRateLimitStore {
  const store: FastifyRateLimitStore = {
    incr(key, callback) {
      limiter.consume(key).then(
        (res) => callback(null, { current: res.consumedPoints, ttl: res.msBeforeNext }),
        (refusal: unknown) => {
          if (refusal instanceof RateLimiterRes) {
            callback(null, { current: refusal.consumedPoints, ttl: refusal.msBeforeNext });
            return;
          }
          // The 503 says only that Redis could not count; the operator needs what Redis said.
          log.warn({ err: refusal }, 'rate limit not counted');
          callback(uncounted());
        },
      );
    },
    child: () => store,
  };
  return store;
}

export default fp<RateLimitOptions>(
  async (app, options) => {
    const limiter = new RateLimiterRedis({
      storeClient: options.redis,
      points: options.max,
      duration: 60,
      keyPrefix: '',
    });
    const store = accountCountStore(limiter, app.log);
    // Before the plugin's route hook reads it: an uncounted write may be a flood's, so it is refused.
    app.addHook('onRoute', (route) => {
      if (isWriteRoute(route.method)) route.config = { ...route.config, rateLimit: { skipOnError: false } };
    });
    await app.register(rateLimit, {
      max: options.max,
      timeWindow: 60_000,
      hook: 'preValidation',
      store: class {
        constructor() {
          return store;
        }
      } as never,
      // A Redis outage must not take reads down with it: they pass uncounted meanwhile.
      skipOnError: true,
      keyGenerator: (request) =>
        `${options.keyPrefixOf(request.accountId)}:rate-limit:account:${request.accountId}`,
      errorResponseBuilder: (_request, context) =>
        new HttpProblem(
          429,
          'rate-limited',
          `More than ${context.max} requests a minute; retry in ${Math.ceil(context.ttl / 1000)} s`,
          undefined,
          { 'retry-after': String(Math.ceil(context.ttl / 1000)) },
        ),
    });
    app.addHook('preValidation', (request, _reply, done) => {
      if (readMethods.has(request.method) || !redisConnectionDown(options.redis)) return done();
      done(uncounted());
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
