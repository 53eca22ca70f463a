/**
 * Warms the publish path before the API listens, so `/readyz` says ready only once the first requests
 * are not the slowest (V8 optimises after a few hundred runs): `app.inject` publishes for a random
 * account a body the schema refuses (400), running every step but the queue. Needs JWT_SECRET.
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
 * Sends {@link warmUpRequests} refused publishes through `app` (ready, not listening).
 * @returns how many were answered 400; fewer means a dependency is down (`/readyz` says so)
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
