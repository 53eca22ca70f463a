/**
 * Every answer carries `X-Request-Id`, the server's own UUID (`genReqId`), also in the request's log
 * lines and its events' jobs. A caller's `X-Request-Id` is logged beside it as `clientRequestId`, never
 * in its place, so no caller can pass its log lines for another's.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginCallback } from 'fastify';

/** The caller's `X-Request-Id` when it is a plain token of at most 128 characters, else undefined. */
export function clientRequestId(request: {
  headers: Record<string, string | string[] | undefined>;
}): string | undefined {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : undefined;
}

const requestIds: FastifyPluginCallback = (app, _options, done) => {
  app.addHook('onRequest', (request, _reply, next) => {
    const clientId = clientRequestId(request);
    if (clientId !== undefined) request.log = request.log.child({ clientRequestId: clientId });
    next();
  });
  // A callback hook, not an async one: it runs on every answer, and spares a promise per request.
  app.addHook('onSend', (request, reply, payload, next) => {
    reply.header('x-request-id', request.id);
    next(null, payload);
  });
  done();
};

export default fp(requestIds, { name: 'request-ids' });
