/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: PostgreSQL and Redis answer
 * within 2 s; 200 when all are ok, else 503, each dependency in `checks`). With REDIS_WAIT_REPLICAS,
 * `checks.redis_replicas` names the shards lacking replicas, whose publishes are refused: `degraded`
 * with 200, since the API still serves every other shard. Neither needs a token.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import Type from 'typebox';

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
  app.get(
    '/readyz',
    { schema: { hide: true, response: { 200: Status, 503: Status } } },
    async (_request, reply) => {
      const [database, redis] = await Promise.allSettled([
        withTimeout(app.prisma.$queryRaw`SELECT 1`, 2000),
        withTimeout(app.redis.ping(), 2000),
      ]);
      const checks = {
        postgresql: database.status === 'fulfilled' ? 'ok' : 'unreachable',
        redis: redis.status === 'fulfilled' ? 'ok' : 'unreachable',
      };
      const ready = database.status === 'fulfilled' && redis.status === 'fulfilled';
      const watch = app.replicaWatch;
      const refusing = watch === null ? [] : watch.current().filter(({ shard }) => watch.refuses(shard));
      const replicas: Record<string, string> =
        watch === null
          ? {}
          : {
              redis_replicas:
                refusing.length === 0
                  ? 'ok'
                  : `publishes refused on shards ${refusing.map(({ shard }) => shard).join(', ')}: too few replicas`,
            };
      const status = !ready ? 'not ready' : refusing.length > 0 ? 'degraded' : 'ready';
      return reply.code(ready ? 200 : 503).send({ status, checks: { ...checks, ...replicas } });
    },
  );
};

export default fp(health, { name: 'health-routes', encapsulate: true });
