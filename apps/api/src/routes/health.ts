/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: PostgreSQL and Redis answer
 * within 2 s; 503 with what failed otherwise). Neither needs a token.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { HttpProblem } from '../lib/problem.js';

const withTimeout = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), ms).unref()),
  ]);

const health: FastifyPluginAsyncTypebox = async (app) => {
  const Status = Type.Object({
    status: Type.String(),
    checks: Type.Optional(Type.Record(Type.String(), Type.String())),
  });
  app.get('/healthz', { schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Status } } }, async () => {
    const [database, redis] = await Promise.allSettled([
      withTimeout(app.prisma.$queryRaw`SELECT 1`, 2000),
      withTimeout(app.redis.ping(), 2000),
    ]);
    const failed = [
      database.status === 'rejected' && 'postgresql',
      redis.status === 'rejected' && 'redis',
    ].filter(Boolean);
    if (failed.length > 0) throw new HttpProblem(503, 'not-ready', `Not reachable: ${failed.join(', ')}`);
    return { status: 'ready', checks: { postgresql: 'ok', redis: 'ok' } };
  });
};

export default health;
