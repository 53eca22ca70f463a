/**
 * The API benchmarks' baselines, served by a process set up like the API (Fastify, one process):
 * - `POST /baseline/events` is a bare route answering `{}`;
 * - `POST /baseline/fair-events` does only what any accepted event requires: the same
 *   bearer-token check (fast-jwt's verifier with its cache, as the API), the same Redis rate-limit
 *   script, and one BullMQ `add`, answering 202;
 * - `GET /baseline/webhooks/:id` is the API's read route with the same bearer-token check and
 *   Redis-backed rate limit, reading the subscription with `pg` directly instead of through Prisma.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import Fastify from 'fastify';
import jwt from '@fastify/jwt';
import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import pg from 'pg';

const port = Number(process.env.PORT);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const redis = new Redis(String(process.env.REDIS_URL), {
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
});
const queue = new Queue('baseline-events', {
  connection: new Redis(String(process.env.REDIS_URL), { maxRetriesPerRequest: 1 }),
  prefix: String(process.env.QUEUE_PREFIX),
});
const app = Fastify({ logger: false });
await app.register(jwt, {
  secret: String(process.env.JWT_SECRET),
  verify: { algorithms: ['HS256'], cache: 10_000 },
});

app.post('/baseline/events', async () => ({}));

app.register(async (authenticated) => {
  authenticated.addHook('onRequest', async (request) => {
    await request.jwtVerify();
  });
  await authenticated.register(rateLimit, {
    max: 100_000_000,
    timeWindow: 60_000,
    hook: 'preValidation',
    redis,
    nameSpace: `baseline-${port}:`,
    keyGenerator: (request) => `account:${(request.user as { sub: string }).sub}`,
  });
  authenticated.post<{ Body: { type: string; data: Record<string, unknown> } }>(
    '/baseline/fair-events',
    async (request, reply) => {
      const { sub } = request.user as { sub: string };
      const id = randomUUID();
      await queue.add('event', { id, accountId: sub, ...request.body }, { jobId: id });
      return reply.code(202).send({ id });
    },
  );
  authenticated.get<{ Params: { id: string } }>('/baseline/webhooks/:id', async (request, reply) => {
    const { sub } = request.user as { sub: string };
    const { rows } = await pool.query(
      `SELECT id, account_id, callback_url, webhook_id, kind, status, created_at, updated_at
     FROM subscriptions WHERE id = $1 AND account_id = $2 LIMIT 1`,
      [request.params.id, sub],
    );
    const row = rows[0];
    if (!row) return reply.code(404).send({ status: 404 });
    return {
      id: row.id,
      resource_uri: `/api/webhooks/${row.id}`,
      callback_url: row.callback_url,
      webhook_id: row.webhook_id,
      account_id: row.account_id,
      kind: row.kind,
      status: row.status,
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    };
  });
});

process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => queue.close())
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
await app.listen({ host: '127.0.0.1', port });
