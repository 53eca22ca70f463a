/**
 * Per-account rate limiting (RATE_LIMIT_PER_MINUTE requests a minute) with @fastify/rate-limit on
 * a Redis store, so every API instance shares the count. Registered inside the account scope of
 * app.ts, after authentication: it attaches to exactly the authenticated routes (never by URL
 * prefix), keyed on the verified account, so nobody can spend another account's allowance. Over the
 * limit: 429 with `Retry-After` (seconds).
 *
 * The count lives on a connection of its own ({@link createPipelinedConnection}), so the
 * increments of concurrent requests reach Redis as one write; it is closed with the app.
 */
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { createPipelinedConnection, type RedisTopology } from '@webhooks/shared';
import { HttpProblem } from '../lib/problem.js';

/** Options of the rate-limit plugin. */
export interface RateLimitOptions {
  /** RATE_LIMIT_PER_MINUTE. */
  max: number;
  /** Prefix of the counters' Redis keys. */
  nameSpace: string;
  /** Where the counters live: the API's Redis. */
  redis: RedisTopology;
}

/**
 * Longest wait for the count, in ms; past it the request passes uncounted (`skipOnError`), as
 * while Redis is away. A healthy Redis answers in a few ms even under load.
 */
const countTimeoutMs = 1_000;

export default fp<RateLimitOptions>(
  async (app, options) => {
    const redis = createPipelinedConnection(options.redis, countTimeoutMs);
    redis.on('error', (error) => app.log.warn({ err: error }, 'redis connection error (rate limit)'));
    app.addHook('onClose', async () => {
      redis.disconnect();
    });
    await app.register(rateLimit, {
      max: options.max,
      timeWindow: 60_000,
      hook: 'preValidation',
      redis,
      nameSpace: options.nameSpace,
      // A Redis outage must not take the API down with it: requests pass uncounted meanwhile.
      skipOnError: true,
      keyGenerator: (request) => `account:${request.accountId}`,
      errorResponseBuilder: (_request, context) =>
        new HttpProblem(
          429,
          'rate-limited',
          `More than ${context.max} requests a minute; retry in ${Math.ceil(context.ttl / 1000)} s`,
          undefined,
          { 'retry-after': String(Math.ceil(context.ttl / 1000)) },
        ),
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
