/**
 * Per-account rate limiting (RATE_LIMIT_PER_MINUTE requests a minute) with @fastify/rate-limit on
 * a Redis store, so every API instance shares the count. Registered inside the account scope of
 * app.ts, after authentication: it attaches to exactly the authenticated routes (never by URL
 * prefix), keyed on the verified account, so nobody can spend another account's allowance. Over the
 * limit: 429 with `Retry-After` (seconds).
 *
 * The count goes through the app's auto-pipelined counting connection (`createPipelinedConnection`
 * in @webhooks/shared, shared with the payload quota), so the increments of concurrent requests
 * reach Redis as one write. Its command timeout bounds the wait: past it a read passes uncounted
 * (`skipOnError`). While that connection is not up, reads pass uncounted and writes answer 503
 * with `Retry-After`: the limit fails closed for what changes state.
 */
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { redisConnectionDown, type RedisConnection } from '@webhooks/shared';
import { serviceUnavailable } from '../lib/infrastructure-error.js';
import { HttpProblem } from '../lib/problem.js';

/** Methods that change nothing: they pass uncounted while Redis is away. */
const readMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Options of the rate-limit plugin. */
export interface RateLimitOptions {
  /** RATE_LIMIT_PER_MINUTE. */
  max: number;
  /** Prefix of an account's counter's Redis key: its queue shard's, so that accounts spread. */
  keyPrefixOf: (accountId: string) => string;
  /** The auto-pipelined connection the counts go through; the app owns and closes it. */
  redis: RedisConnection;
}

export default fp<RateLimitOptions>(
  async (app, options) => {
    await app.register(rateLimit, {
      max: options.max,
      timeWindow: 60_000,
      hook: 'preValidation',
      redis: options.redis,
      nameSpace: '',
      // A Redis outage must not take reads down with it: they pass uncounted meanwhile (writes are
      // refused below).
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
    // Fail closed for writes: an uncounted write could be one of a flood the limit exists to stop.
    app.addHook('preValidation', (request, _reply, done) => {
      if (readMethods.has(request.method) || !redisConnectionDown(options.redis)) return done();
      done(
        serviceUnavailable(
          'Redis is unavailable, so the rate limit cannot count this request; nothing was accepted or changed. Retry later.',
        ),
      );
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
