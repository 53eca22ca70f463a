/**
 * Warming the publish path before the API listens, so that it says it is ready (`/readyz`) only
 * once the first real requests are no longer the slowest: V8 optimises what a request runs only
 * after a few hundred runs, and a fresh process's first burst would otherwise wait on it. The
 * publishes go through `app.inject` for an account of their own (a fresh random id each start)
 * with a body the schema refuses (400), so nothing is queued: token verification, the rate
 * limit's Redis script, the shedding hooks, body parsing, validation and problem details run as
 * for a real publish, untraced. Needs an HS256 key (JWT_SECRET) to mint the token; with an identity
 * provider's key it warms nothing.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { untraced } from '@webhooks/shared/edge-sampling-hook';
import type { ApiConfig } from './config.js';
import { configuredTokenMinter } from './tokens.js';

/** Publishes sent while warming, and how many at once. */
export const warmUpRequests = 400;
const warmUpConcurrency = 20;

/**
 * Sends {@link warmUpRequests} refused publishes through `app` (ready, not yet listening).
 *
 * @returns how many were answered as expected (400); fewer means a dependency was down, which
 *   `/readyz` then reports, so the API starts anyway
 */
export async function warmUp(
  app: FastifyInstance,
  config: Pick<ApiConfig, 'jwtKey' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>,
): Promise<number> {
  const mint = configuredTokenMinter(config, 60_000);
  if (mint === null) return 0;
  const token = mint(`warm-up-${randomUUID()}`);
  let refused = 0;
  // Its requests' log lines would be hundreds of the first lines a deployment shows.
  const level = app.log.level;
  if (['trace', 'debug', 'info'].includes(level)) app.log.level = 'warn';
  try {
    for (let sent = 0; sent < warmUpRequests; sent += warmUpConcurrency) {
      const answers = await untraced(() =>
        Promise.all(
          Array.from({ length: warmUpConcurrency }, () =>
            app.inject({
              method: 'POST',
              url: '/api/events',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              payload: { data: { warm: true } },
            }),
          ),
        ),
      );
      refused += answers.filter((answer) => answer.statusCode === 400).length;
    }
  } finally {
    app.log.level = level;
  }
  return refused;
}
