/**
 * Every route of an account's data in one encapsulated scope, its authentication, rate limit and
 * input guard applying to it alone; each route is marked `accountScoped` (load shedding reads it).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { createPipelinedConnection } from '@webhooks/shared';
import type { ApiConfig } from './config.js';
import type { BacklogWatch } from './lib/backlog.js';
import { createIdempotencyStore } from './lib/idempotency-store.js';
import { createRelayCopies } from './lib/relay-copies.js';
import type { PortalLinks } from './lib/portal-links.js';
import auth from './plugins/app/auth.js';
import rateLimit from './plugins/app/rate-limit.js';
import storableInput from './plugins/app/storable-input.js';
import deliveries from './routes/deliveries.js';
import customHeaders from './routes/custom-headers.js';
import eventLog from './routes/event-log.js';
import events from './routes/events.js';
import eventTypes from './routes/event-types.js';
import filterTests from './routes/filter-tests.js';
import listen, { keepAliveMs } from './routes/listen.js';
import portalSessions from './routes/portal-sessions.js';
import signingSecret from './routes/signing-secret.js';
import subscriptions from './routes/subscriptions.js';
import subscriptionHealth from './routes/subscription-health.js';
import testEvents from './routes/test-events.js';
import transformationTests from './routes/transformation-tests.js';
import type { ApiServices } from './services.js';

/** Most `webhooks listen` streams one API process serves at once (each holds a Redis connection). */
const listenersPerProcess = 100;

/** What the scope is built from. */
export interface AccountScopeOptions {
  config: ApiConfig;
  services: ApiServices;
  backlog: BacklogWatch;
  /** Portal links; null without a portal key. */
  portalLinks: PortalLinks | null;
}

const accountScope: FastifyPluginAsync<AccountScopeOptions> = async (scope, options) => {
  const { config, services, backlog, portalLinks } = options;
  const { views, quotas, transformations, portalTokens, countingRedis } = services;
  const { catalogue, secretBox } = config;
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, accountScoped: true };
  });
  await scope.register(auth, {
    authFailures: scope.authFailures,
    jwtKey: config.jwtKey,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    maxAgeSeconds: config.JWT_MAX_AGE_SECONDS,
    portal:
      portalTokens === null || portalLinks === null
        ? null
        : { tokens: portalTokens, revoked: (id: string) => portalLinks.revoked(id) },
  });
  scope.addHook('onRequest', scope.shedOverShare);
  await scope.register(rateLimit, {
    max: config.RATE_LIMIT_PER_MINUTE,
    keyPrefixOf: config.shards.accountPrefix,
    redis: countingRedis,
  });
  await scope.register(storableInput);
  const relayCopies = createRelayCopies(countingRedis, scope.prisma, config.keyPrefix);

  await scope.register(eventTypes, { views });
  await scope.register(subscriptions, {
    callbackPolicy: config.callbackPolicy,
    callbackHint:
      config.NODE_ENV === 'development'
        ? ' (in development, CALLBACK_ALLOW_PRIVATE=true allows local callbacks)'
        : '',
    secretBox,
    transformations,
    shards: config.shards,
    inFlightBounds: config.inFlightBounds,
    maxPerAccount: quotas.maxSubscriptions,
    verifyCallbacks: config.CALLBACK_VERIFICATION === 'challenge',
    views,
    relayCopies,
    tokenUrlRules: config.tokenUrlRules,
    catalogue,
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    brokers: config.brokers,
  });
  await scope.register(subscriptionHealth, { views });
  await scope.register(signingSecret, { secretBox });
  await scope.register(customHeaders, { secretBox });
  await scope.register(events, {
    backlog,
    quotas,
    idempotency: config.IDEMPOTENCY_STORE === 'postgresql' ? createIdempotencyStore(scope.prisma) : null,
  });
  await scope.register(eventLog, { views, catalogue, relayCopies });
  await scope.register(testEvents, { catalogue, admission: { backlog, quotas } });
  await scope.register(filterTests, { catalogue });
  await scope.register(transformationTests, { transformations, secretBox });
  await scope.register(deliveries, {
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    views,
    backlog,
    redis: countingRedis,
    keyPrefix: config.keyPrefix,
    recoverRoundsPerMinute: config.RECOVER_ROUNDS_PER_MINUTE,
  });
  await scope.register(listen, {
    redis: countingRedis,
    blocking() {
      // A read blocks keepAliveMs at most: a command timeout past it.
      const connection = createPipelinedConnection(config.redis, keepAliveMs + 5_000);
      connection.on('error', (error) => scope.log.warn({ err: error }, 'redis connection error (listen)'));
      return connection;
    },
    prefix: config.keyPrefix,
    maxListeners: listenersPerProcess,
    maxListenersPerAccount: config.LISTEN_MAX_PER_ACCOUNT,
    idleMs: config.LISTEN_IDLE_MS,
    abandonedMs: config.LISTEN_ABANDONED_MS,
  });
  if (portalLinks !== null) await scope.register(portalSessions, { links: portalLinks, views });
};

// Named, as every plugin here: Fastify looks up an unnamed plugin's name through every loaded module.
export default fp(accountScope, { name: 'account-scope', encapsulate: true });
