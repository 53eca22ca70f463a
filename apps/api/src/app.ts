/**
 * Builds the API service (server.ts listens; tests `inject`). It only composes: services.ts's
 * services, then plugins in dependency order: tracing, request ids, headers, errors, metrics,
 * PostgreSQL and Redis, shedding and per-IP limits (first hooks, so a shed request costs nothing
 * more), OpenAPI and public routes, operators' routes (ADMIN_PORT: a second instance), the account scope.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { serviceLoggerOptions } from '@webhooks/shared';
import accountScope from './account-scope.js';
import { apiServerUrl, type ApiConfig } from './config.js';
import { createBacklogWatch } from './lib/backlog.js';
import { connectionBound, descriptorLimit, outOfDescriptors } from './lib/descriptors.js';
import { createPortalLinks } from './lib/portal-links.js';
import ipLimits from './plugins/app/ip-limits.js';
import loadShedding from './plugins/app/load-shedding.js';
import requestIds from './plugins/app/request-ids.js';
import metrics, { metricsRoute } from './plugins/external/metrics.js';
import portal from './plugins/external/portal.js';
import prisma from './plugins/external/prisma.js';
import problemDetails from './plugins/external/problem-details.js';
import queueDashboard from './plugins/external/queue-dashboard.js';
import queues from './plugins/external/queues.js';
import securityHeaders from './plugins/external/security-headers.js';
import swagger from './plugins/external/swagger.js';
import { registerTracing } from './plugins/external/tracing.js';
import validation from './plugins/external/validation.js';
import health from './routes/health.js';
import { portalLinkExchange } from './routes/portal-sessions.js';
import { createServices } from './services.js';

/** The portal's build (apps/portal/dist), from this module in apps/api/src or apps/api/dist. */
const portalRoot = fileURLToPath(new URL('../../portal/dist/', import.meta.url));

/** Largest request body accepted, in bytes (1 MiB); larger answers 413. */
export const bodyLimitBytes = 1024 * 1024;

/** Time a client has to send a whole request, in ms; slower ones are answered 408 (slowloris). */
export const requestTimeoutMs = 30_000;

/** Idle time after which a connection is closed, in ms (Node's `server.timeout`). */
export const connectionTimeoutMs = 60_000;

/** The operators' listener of ADMIN_PORT: the same headers and problem details as the API. */
async function buildOperatorApp(config: ApiConfig): Promise<FastifyInstance> {
  const operator = Fastify({ logger: serviceLoggerOptions(config), trustProxy: config.trustProxy });
  await operator.register(securityHeaders);
  await operator.register(problemDetails);
  return operator;
}

/** A ready-to-listen API app for `config`; `app.close()` closes its PostgreSQL pool and Redis connections. */
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
  if (config.jwtWarning) app.log.warn(config.jwtWarning);
  const services = createServices(config, app.log);
  app.addHook('onClose', () => services.close());

  if (config.tracing) await registerTracing(app, config.edgeSampling);
  await app.register(requestIds);
  await app.register(securityHeaders);
  await app.register(validation);
  await app.register(problemDetails);
  await app.register(metrics);
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
  const watch = createBacklogWatch(
    app.redis,
    config.shards.prefixes,
    { events: config.BACKLOG_MAX_EVENTS, deliveries: config.BACKLOG_MAX_DELIVERIES },
    app.log,
    config.API_SHED_MAX_FANOUT_WAIT_MS > 0,
  );
  app.addHook('onClose', async () => watch.close());
  await app.register(loadShedding, {
    maxEventLoopDelayMs: config.API_SHED_EVENT_LOOP_DELAY_MS,
    maxRequestWaitMs: config.API_SHED_MAX_WAIT_MS,
    maxFanOutWaitMs: config.API_SHED_MAX_FANOUT_WAIT_MS,
    maxInFlight: config.API_SHED_MAX_IN_FLIGHT,
    fanOutWaitMs: () => watch.fanOutWaitMs(),
  });
  await app.register(ipLimits, {
    redis: services.countingRedis,
    keyPrefix: config.keyPrefix,
    openPerMinute: config.OPEN_REQUESTS_PER_MINUTE_PER_IP,
    authFailuresPerMinute: config.AUTH_FAILURES_PER_MINUTE_PER_IP,
  });
  const { portalTokens } = services;
  const portalLinks =
    portalTokens === null
      ? null
      : createPortalLinks({
          redis: app.redis,
          prefix: config.keyPrefix,
          tokens: portalTokens,
          linkSeconds: config.PORTAL_LINK_SECONDS,
        });

  await app.register(swagger, { serverUrl: apiServerUrl(config), serve: config.API_DOCS });
  await app.register(health);
  await app.register(portal, { root: portalRoot, frameAncestors: config.PORTAL_FRAME_ANCESTORS });
  if (portalLinks !== null) await app.register(portalLinkExchange, { links: portalLinks });
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
  await app.register(accountScope, { config, services, backlog: watch, portalLinks });
  await app.ready();
  return app;
}
