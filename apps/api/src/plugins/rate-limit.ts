/**
 * Per-account rate limiting (RATE_LIMIT_PER_MINUTE requests a minute) with @fastify/rate-limit on
 * a Redis store, so every API instance shares the count. Registered inside the account scope of
 * app.ts, after authentication: it attaches to exactly the authenticated routes (never by URL
 * prefix), keyed on the verified account, so nobody can spend another account's allowance. Over the
 * limit: 429 with `Retry-After` (seconds).
 */
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { HttpProblem } from '../lib/problem.js';

export default fp<{ max: number; nameSpace: string }>(
  async (app, options) => {
    await app.register(rateLimit, {
      max: options.max,
      timeWindow: 60_000,
      hook: 'preValidation',
      redis: app.redis,
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
  { name: 'rate-limit', dependencies: ['queues', 'auth'] },
);
