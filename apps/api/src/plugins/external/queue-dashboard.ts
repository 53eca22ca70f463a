/**
 * The operators' queue dashboard (bull-board at `/admin/queues`), only with ADMIN_TOKEN, every
 * request carrying it (bearer or Basic password, so a browser prompts); never a JWT. Without: 401.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { operatorTokenAccepted, queueNames, type RedisConnection } from '@webhooks/shared';
import { HttpProblem } from '../../lib/problem.js';

/** Where the dashboard is served. */
export const queueDashboardPath = '/admin/queues';

/** The dashboard's Content-Security-Policy: its own scripts, inline styles and web font, no framing. */
export const queueDashboardContentSecurityPolicy =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; font-src 'self' https://fonts.gstatic.com; img-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** Options of the dashboard: its token, and the Redis connection and key prefixes of the queues. */
export interface QueueDashboardOptions {
  token: string;
  /** Of the unsharded queues (`maintenance`, `verifications`). */
  keyPrefix: string;
  /** Of each queue shard's `events` and `deliveries` (QUEUE_SHARDS). */
  shardPrefixes: readonly string[];
  redis: RedisConnection;
}

const queueDashboard: FastifyPluginAsync<QueueDashboardOptions> = async (app, options) => {
  // Answered here, not thrown: bull-board's routes have an error handler of their own.
  app.addHook('onRequest', async (request, reply) => {
    if (operatorTokenAccepted(request.headers.authorization, options.token)) return;
    const problem = new HttpProblem(401, 'unauthorized', 'ADMIN_TOKEN is required');
    return reply
      .code(401)
      .header('www-authenticate', 'Basic realm="queues", charset="UTF-8"')
      .type('application/problem+json')
      .send(problem.toProblem(request.url));
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.header('content-security-policy', queueDashboardContentSecurityPolicy);
  });
  const open = (name: string, prefix: string) => new Queue(name, { connection: options.redis, prefix });
  const sharded = options.shardPrefixes.length > 1;
  // With several shards, each shard's queues show as `shard N/events` and `shard N/deliveries`.
  const adapters = [
    ...options.shardPrefixes.flatMap((prefix, shard) =>
      [queueNames.events, queueNames.deliveries].map((name) => ({
        queue: open(name, prefix),
        options: sharded ? { prefix: `shard ${shard}/`, delimiter: '/' } : {},
      })),
    ),
    ...[queueNames.maintenance, queueNames.verifications].map((name) => ({
      queue: open(name, options.keyPrefix),
      options: {},
    })),
  ];
  for (const { queue } of adapters)
    queue.on('error', (error) => app.log.warn({ err: error }, 'dashboard queue error'));
  app.addHook('onClose', async () => {
    await Promise.all(adapters.map(({ queue }) => queue.close()));
  });
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(queueDashboardPath);
  createBullBoard({
    queues: adapters.map(({ queue, options: display }) => new BullMQAdapter(queue, display)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Webhook queues' } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: queueDashboardPath });
};

export default fp(queueDashboard, { name: 'queue-dashboard', encapsulate: true });
