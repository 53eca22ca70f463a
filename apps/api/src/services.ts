/**
 * The services the API's plugins and routes share, built once from its configuration (counting
 * connection, sandbox, quotas, presenters, portal tokens); those needing the app's Redis or
 * PostgreSQL are built in app.ts.
 */
import type { FastifyBaseLogger } from 'fastify';
import {
  createPipelinedConnection,
  createTransformationRunner,
  transformationLimitsFromEnv,
  type RedisConnection,
  type TransformationRunner,
} from '@webhooks/shared';
import type { ApiConfig } from './config.js';
import { createAccountQuotas, type AccountQuotas } from './lib/account-quotas.js';
import { createPortalTokens, portalKey, type PortalTokens } from './lib/portal-tokens.js';
import { createViews, type Views } from './lib/views.js';
import { clockToleranceMs } from './plugins/app/auth.js';

/** Longest wait for a count (rate limit, payload quota), in ms: then a read passes uncounted, a publish answers 503. */
const countTimeoutMs = 1_000;

/** What {@link createServices} builds. */
export interface ApiServices {
  /** The counts' connection, auto-pipelined (not on a Cluster), so concurrent requests' counts go as one write. */
  countingRedis: RedisConnection;
  /** The sandbox that checks and tries transformations (threads start at first use); null when off. */
  transformations: TransformationRunner | null;
  quotas: AccountQuotas;
  views: Views;
  /** Portal session tokens; null without a portal key. */
  portalTokens: PortalTokens | null;
  /** Closes what they hold: the counting connection and the sandbox's threads. */
  close(): Promise<void>;
}

/** Builds the services of `config`; connection errors are logged on `log`. */
export function createServices(config: ApiConfig, log: FastifyBaseLogger): ApiServices {
  const countingRedis = createPipelinedConnection(config.redis, countTimeoutMs);
  countingRedis.on('error', (error) => log.warn({ err: error }, 'redis connection error (counts)'));
  const transformations = config.TRANSFORMATIONS
    ? createTransformationRunner(transformationLimitsFromEnv(config), config.callbackPolicy)
    : null;
  const portalSigningKey = portalKey(config);
  return {
    countingRedis,
    transformations,
    quotas: createAccountQuotas({
      redis: countingRedis,
      prefixOf: config.shards.accountPrefix,
      maxSubscriptions: config.MAX_SUBSCRIPTIONS_PER_ACCOUNT,
      payloadBytesPerDay: config.ACCOUNT_PAYLOAD_BYTES_PER_DAY,
      overrides: config.accountOverrides,
    }),
    views: createViews(config.PUBLIC_BASE_URL, config.catalogue, config.secretBox),
    portalTokens: portalSigningKey === null ? null : createPortalTokens(portalSigningKey, clockToleranceMs),
    async close() {
      countingRedis.disconnect();
      await transformations?.close();
    },
  };
}
