/**
 * An API app of a test file's own: its own database and queue prefix, built with `buildApp` (no
 * listening), with a helper that mints bearer tokens for any account.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import {
  buildApp,
  createPortalTokens,
  createTokenMinter,
  loadApiConfig,
  portalKey,
  type ApiConfig,
} from '@webhooks/api';
import { createEventPublisher, type EventPublisher, type EventPublisherOptions } from '@webhooks/shared';
import { createTestDatabase, type TestDatabase } from './database.js';
import { dropPrefix, newQueuePrefix, testRedisUrl } from './redis.js';

/** The HS256 secret test apps verify tokens with. */
export const testJwtSecret = 'test-secret-at-least-32-characters-long!!';

/** A running test API. */
export interface TestApi {
  app: FastifyInstance;
  config: ApiConfig;
  database: TestDatabase;
  prefix: string;
  /** A bearer token for `account`, expiring in an hour; `claims` override (`exp: undefined` drops it). */
  token(account: string, claims?: Record<string, unknown>): string;
  /**
   * A portal session token for `account` signed as this API signs them, valid `ttlSeconds` from
   * now (negative: already expired).
   */
  portalToken(account: string, ttlSeconds: number): string;
  /** `{ authorization: 'Bearer …' }` for `account`. */
  auth(account: string): { authorization: string };
  close(): Promise<void>;
}

/** One SECRETS_ENCRYPTION_KEY for test services, so tests run with signing secrets sealed as in production. */
export const testEncryptionKey = Buffer.alloc(32, 7).toString('base64');

/** The environment of a test service on `database` and `prefix`, plus `env` overrides. */
export function testEnv(
  databaseUrl: string,
  prefix: string,
  env: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: testRedisUrl,
    QUEUE_PREFIX: prefix,
    JWT_SECRET: testJwtSecret,
    SECRETS_ENCRYPTION_KEY: testEncryptionKey,
    LOG_LEVEL: 'silent',
    CALLBACK_ALLOW_PRIVATE: 'false',
    NODE_ENV: 'test',
    // A test's API shares its process with the test's clients and often its worker: their work is
    // not the API's saturation. The load-shedding test sets its own thresholds.
    API_SHED_EVENT_LOOP_DELAY_MS: '0',
    API_SHED_MAX_WAIT_MS: '0',
    API_SHED_MAX_FANOUT_WAIT_MS: '0',
    API_SHED_MAX_IN_FLIGHT: '0',
    ...env,
  };
}

/** Builds an API on a fresh database and queue prefix. */
export async function startTestApi(tag: string, env: Record<string, string> = {}): Promise<TestApi> {
  const database = await createTestDatabase(tag);
  const prefix = newQueuePrefix(tag);
  const config = loadApiConfig(testEnv(database.url, prefix, env));
  const app = await buildApp(config);
  const token = createTokenMinter({ secret: testJwtSecret });
  return {
    app,
    config,
    database,
    prefix,
    token,
    portalToken: (account, ttlSeconds) =>
      createPortalTokens(portalKey(config)!, 0).mint(account, ttlSeconds, randomUUID()).token,
    auth: (account) => ({ authorization: `Bearer ${token(account)}` }),
    async close() {
      await app.close();
      await Promise.all([database.drop(), dropPrefix(prefix)]);
    },
  };
}

/** A subscription as its create answer gives it (`secret` included). */
export type CreatedSubscription = {
  id: string;
  secret: string;
  resource_uri: string;
  [key: string]: unknown;
};

/**
 * Creates a subscription of `account` through `api`, at the endpoint of `kind` when given.
 *
 * @throws Error with the status and body unless the API answers 201
 */
export async function subscribeThrough(
  api: TestApi,
  account: string,
  body: Record<string, unknown>,
  kind?: string,
): Promise<CreatedSubscription> {
  const response = await api.app.inject({
    method: 'POST',
    url: kind ? `/api/webhooks/${kind}` : '/api/webhooks',
    headers: api.auth(account),
    payload: body,
  });
  if (response.statusCode !== 201)
    throw new Error(`subscribe failed: ${response.statusCode} ${response.body}`);
  return response.json();
}

/**
 * An internal service's publisher on `api`'s queues (its prefix, shards and catalogue), with
 * BullMQ's `telemetry` when given. Close it after use.
 */
export function publisherFor(api: TestApi, telemetry?: EventPublisherOptions['telemetry']): EventPublisher {
  return createEventPublisher({
    redis: api.config.redis,
    prefix: api.prefix,
    shards: api.config.QUEUE_SHARDS,
    catalogue: api.config.catalogue,
    ...(telemetry === undefined ? {} : { telemetry }),
  });
}
