/**
 * Builds the API service (no listening: server.ts does that, tests use `inject`). Plugins are
 * registered in dependency order: validation and errors, metrics, then PostgreSQL and Redis, then
 * the OpenAPI document and the public routes (health, the subscriber portal's files at /portal/),
 * then the account scope: one encapsulated plugin whose authentication, rate limit and input guard
 * apply to every route registered inside it and to no other, so no spelling of a path can reach
 * account data unauthenticated. Every answer carries `X-Request-Id` (a UUID of the server's own),
 * which is also in the request's log lines (`reqId`) and in the jobs of the events it publishes.
 *
 * The operators' routes (`/metrics`, and the queue dashboard when ADMIN_TOKEN is set) are served
 * by `app.operator`: the app itself, or with ADMIN_PORT a second Fastify instance that server.ts
 * listens with on that port, so that they need not be reachable where clients are.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { edgeSamplingHooks } from '@webhooks/shared/edge-sampling-hook';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  createPipelinedConnection,
  createTransformationRunner,
  serviceLoggerOptions,
  transformationLimitsFromEnv,
} from '@webhooks/shared';
import { apiServerUrl, type ApiConfig } from './config.js';
import { createAccountQuotas } from './lib/account-quotas.js';
import { createBacklogWatch, type BacklogWatch } from './lib/backlog.js';
import { createIdempotencyStore } from './lib/idempotency-store.js';
import { createViews } from './lib/views.js';
import { createPortalTokens, portalKey } from './lib/portal-tokens.js';
import auth, { clockToleranceMs } from './plugins/auth.js';
import metrics, { metricsRoute } from './plugins/metrics.js';
import prisma from './plugins/prisma.js';
import problemDetails from './plugins/problem-details.js';
import queueDashboard from './plugins/queue-dashboard.js';
import queues from './plugins/queues.js';
import rateLimit from './plugins/rate-limit.js';
import storableInput from './plugins/storable-input.js';
import swagger from './plugins/swagger.js';
import validation from './plugins/validation.js';
import deliveries from './routes/deliveries.js';
import eventLog from './routes/event-log.js';
import transformationTests from './routes/transformation-tests.js';
import events from './routes/events.js';
import eventTypes from './routes/event-types.js';
import health from './routes/health.js';
import portalSessions, { portalLinkExchange } from './routes/portal-sessions.js';
import { createPortalLinks } from './lib/portal-links.js';
import testEvents from './routes/test-events.js';
import filterTests from './routes/filter-tests.js';
import portal from './plugins/portal.js';
import securityHeaders from './plugins/security-headers.js';
import ipLimits from './plugins/ip-limits.js';
import loadShedding from './plugins/load-shedding.js';
import { connectionBound, descriptorLimit, outOfDescriptors } from './lib/descriptors.js';
import signingSecret from './routes/signing-secret.js';
import customHeaders from './routes/custom-headers.js';
import subscriptions from './routes/subscriptions.js';

/** The portal's build (apps/portal/dist), from this module in apps/api/src or apps/api/dist. */
const portalRoot = fileURLToPath(new URL('../../portal/dist/', import.meta.url));

/** Largest request body accepted, in bytes (1 MiB); larger answers 413. */
export const bodyLimitBytes = 1024 * 1024;

/** Time a client has to send a whole request, in ms; slower ones are answered 408 (slowloris). */
export const requestTimeoutMs = 30_000;

/** Idle time after which a connection is closed, in ms (Node's `server.timeout`). */
export const connectionTimeoutMs = 60_000;

/**
 * Longest wait for a count (the rate limit's, the payload quota's), in ms. Past it a request passes
 * the rate limit uncounted, and a publish answers 503 (the publisher needs Redis too). A healthy
 * Redis answers in a few ms even under load.
 */
const countTimeoutMs = 1_000;

/**
 * The caller's own `X-Request-Id` when it is a plain token of at most 128 characters: logged as
 * `clientRequestId` beside the server's id, never in its place, so that no caller can make its
 * requests' log lines pass for another's.
 */
function clientRequestId(request: { headers: Record<string, string | string[] | undefined> }) {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : undefined;
}

/** The operators' listener of ADMIN_PORT: the same headers and problem details as the API. */
async function buildOperatorApp(config: ApiConfig): Promise<FastifyInstance> {
  const operator = Fastify({ logger: serviceLoggerOptions(config), trustProxy: config.trustProxy });
  await operator.register(securityHeaders);
  await operator.register(problemDetails);
  return operator;
}

/**
 * A ready-to-listen API app for `config`. Close it with `app.close()`, which also closes its
 * PostgreSQL pool and Redis connection.
 */
export async function buildApp(config: ApiConfig): Promise<FastifyInstance> {
  const app = Fastify({
    logger: serviceLoggerOptions(config),
    bodyLimit: bodyLimitBytes,
    requestTimeout: requestTimeoutMs,
    connectionTimeout: connectionTimeoutMs,
    routerOptions: { ignoreTrailingSlash: true },
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    genReqId: () => randomUUID(),
  }).withTypeProvider<TypeBoxTypeProvider>();
  // A spike holds no more sockets than leave room for the descriptors its requests need.
  const maxConnections = connectionBound(config.API_MAX_CONNECTIONS, descriptorLimit());
  if (maxConnections !== null) app.server.maxConnections = maxConnections;
  app.server.on('error', (error) => {
    if (outOfDescriptors(error)) app.log.warn({ err: error }, 'out of file descriptors; connections wait');
  });
  app.addHook('onRequest', (request, _reply, done) => {
    const clientId = clientRequestId(request);
    if (clientId !== undefined) request.log = request.log.child({ clientRequestId: clientId });
    done();
  });
  // A callback hook, not an async one: it runs on every answer, and spares a promise per request.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  if (config.jwtWarning) app.log.warn(config.jwtWarning);

  // The rate limits' and the payload quota's counts, one small script each per request: on one
  // connection, auto-pipelined but on a Cluster, the counts of concurrent requests reach Redis as
  // one write.
  const countingRedis = createPipelinedConnection(config.redis, countTimeoutMs);
  countingRedis.on('error', (error) => app.log.warn({ err: error }, 'redis connection error (counts)'));
  app.addHook('onClose', async () => {
    countingRedis.disconnect();
  });
  // The sandbox that checks and tries transformations; its threads start at its first use.
  const transformations = config.TRANSFORMATIONS
    ? createTransformationRunner(transformationLimitsFromEnv(config), config.callbackPolicy)
    : null;
  app.addHook('onClose', async () => transformations?.close());

  // First, so that its spans cover every route registered after it: a request span and a handler
  // span each. A span for every hook (a dozen a request) costs in a request that is not sampled
  // too; without them and the SDK's metrics, tracing at 1% added a sixth less CPU to a publish.
  // A hook's time shows as the request span's gap.
  if (config.tracing) {
    // Before the request span starts: a request drawn against runs with tracing suppressed, and
    // @fastify/otel leaves it alone.
    const edge = config.edgeSampling === undefined ? undefined : edgeSamplingHooks(config.edgeSampling);
    if (edge !== undefined) app.addHook('onRequest', edge.onRequest);
    await app.register(
      new FastifyOtelInstrumentation({
        instrumentHooks: false,
        ...(edge === undefined ? {} : { ignorePaths: edge.ignores }),
      }).plugin(),
    );
  }
  await app.register(securityHeaders);
  await app.register(validation);
  await app.register(problemDetails);
  await app.register(metrics);
  // Before the per-IP limits and authentication: a shed request costs none of their work. The
  // fan-out's wait is the backlog watch's, made once Redis is (below).
  let backlog: BacklogWatch | undefined;
  await app.register(loadShedding, {
    maxEventLoopDelayMs: config.API_SHED_EVENT_LOOP_DELAY_MS,
    maxRequestWaitMs: config.API_SHED_MAX_WAIT_MS,
    maxFanOutWaitMs: config.API_SHED_MAX_FANOUT_WAIT_MS,
    maxInFlight: config.API_SHED_MAX_IN_FLIGHT,
    fanOutWaitMs: () => backlog?.fanOutWaitMs() ?? 0,
  });
  await app.register(ipLimits, {
    redis: countingRedis,
    keyPrefix: config.keyPrefix,
    openPerMinute: config.OPEN_REQUESTS_PER_MINUTE_PER_IP,
    authFailuresPerMinute: config.AUTH_FAILURES_PER_MINUTE_PER_IP,
  });
  await app.register(prisma, {
    databaseUrl: config.DATABASE_URL,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  });
  await app.register(queues, {
    redis: config.redis,
    queuePrefix: config.QUEUE_PREFIX,
    prefix: config.keyPrefix,
    shards: config.shards,
    waitReplicas: config.REDIS_WAIT_REPLICAS,
    tracing: config.tracing,
    catalogue: config.catalogue,
  });
  await app.register(swagger, { serverUrl: apiServerUrl(config), serve: config.API_DOCS });
  await app.register(health);
  await app.register(portal, { root: portalRoot, frameAncestors: config.PORTAL_FRAME_ANCESTORS });
  const operator: FastifyInstance = config.ADMIN_PORT === 0 ? app : await buildOperatorApp(config);
  app.decorate('operator', operator);
  if (operator !== app) app.addHook('onClose', () => operator.close());
  await operator.register(metricsRoute, { registry: app.metrics, token: config.METRICS_TOKEN });
  if (config.ADMIN_TOKEN !== '') {
    await operator.register(queueDashboard, {
      token: config.ADMIN_TOKEN,
      keyPrefix: config.keyPrefix,
      shardPrefixes: config.shards.prefixes,
      redis: app.redis,
    });
  }

  const { secretBox } = config;
  const quotas = createAccountQuotas({
    redis: countingRedis,
    prefixOf: config.shards.accountPrefix,
    maxSubscriptions: config.MAX_SUBSCRIPTIONS_PER_ACCOUNT,
    payloadBytesPerDay: config.ACCOUNT_PAYLOAD_BYTES_PER_DAY,
    overrides: config.accountOverrides,
  });
  const views = createViews(config.PUBLIC_BASE_URL, config.catalogue, config.secretBox);
  const portalSigningKey = portalKey(config);
  const portalTokens =
    portalSigningKey === null ? null : createPortalTokens(portalSigningKey, clockToleranceMs);
  const portalLinks =
    portalTokens === null
      ? null
      : createPortalLinks({
          redis: app.redis,
          prefix: config.keyPrefix,
          tokens: portalTokens,
          linkSeconds: config.PORTAL_LINK_SECONDS,
        });
  if (portalLinks !== null) await app.register(portalLinkExchange, { links: portalLinks });
  const accountScoped: FastifyPluginAsync = async (accountScope) => {
    accountScope.addHook('onRoute', (route) => {
      route.config = { ...route.config, accountScoped: true };
    });
    await accountScope.register(auth, {
      authFailures: app.authFailures,
      jwtKey: config.jwtKey,
      issuer: config.JWT_ISSUER,
      audience: config.JWT_AUDIENCE,
      maxAgeSeconds: config.JWT_MAX_AGE_SECONDS,
      portal:
        portalTokens === null || portalLinks === null
          ? null
          : { tokens: portalTokens, revoked: (id: string) => portalLinks.revoked(id) },
    });
    accountScope.addHook('onRequest', app.shedOverShare);
    await accountScope.register(rateLimit, {
      max: config.RATE_LIMIT_PER_MINUTE,
      keyPrefixOf: config.shards.accountPrefix,
      redis: countingRedis,
    });
    await accountScope.register(storableInput);
    await accountScope.register(eventTypes, { views });
    await accountScope.register(subscriptions, {
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
      catalogue: config.catalogue,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      brokers: config.brokers,
    });
    await accountScope.register(signingSecret, { secretBox });
    await accountScope.register(customHeaders, { secretBox });
    const watch = createBacklogWatch(
      app.redis,
      config.shards.prefixes,
      { events: config.BACKLOG_MAX_EVENTS, deliveries: config.BACKLOG_MAX_DELIVERIES },
      app.log,
      config.API_SHED_MAX_FANOUT_WAIT_MS > 0,
    );
    backlog = watch;
    app.addHook('onClose', async () => watch.close());
    await accountScope.register(events, {
      backlog: watch,
      quotas,
      idempotency: config.IDEMPOTENCY_STORE === 'postgresql' ? createIdempotencyStore(app.prisma) : null,
    });
    await accountScope.register(eventLog, { views, catalogue: config.catalogue });
    await accountScope.register(testEvents, {
      catalogue: config.catalogue,
      admission: { backlog: watch, quotas },
    });
    await accountScope.register(filterTests, { catalogue: config.catalogue });
    await accountScope.register(transformationTests, { transformations, secretBox });
    await accountScope.register(deliveries, {
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      views,
      backlog: watch,
      redis: countingRedis,
      keyPrefix: config.keyPrefix,
      recoverRoundsPerMinute: config.RECOVER_ROUNDS_PER_MINUTE,
    });
    if (portalLinks !== null) await accountScope.register(portalSessions, { links: portalLinks, views });
  };
  // Named, as every plugin of this app (fastify-plugin's `encapsulate` keeps the scope its own):
  // Fastify looks for an unnamed plugin's name through every loaded module, twice a registration,
  // which under jest's module registry took most of a test API's start.
  await app.register(fp(accountScoped, { name: 'account-scope', encapsulate: true }));
  await app.ready();
  return app;
}
