/**
 * `webhooks listen`'s side of the API, for a `cli` destination (`relay.ts`):
 * - `GET /api/webhooks/{id}/listen` streams relayed attempts as server-sent events (@fastify/sse):
 *   one `delivery` per attempt still waiting, its id the stream entry's for `Last-Event-ID`; headers
 *   at once, then a heartbeat. Streams are bounded per account and per process, and one that has
 *   delivered nothing for LISTEN_IDLE_MS ends (the CLI connects again);
 * - `POST /api/webhooks/{id}/listen/replies` takes the local app's answer back to the waiting worker.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import sse, { type SSEPluginOptions } from '@fastify/sse';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import {
  RelayReply,
  relayKeys,
  relaySession,
  type RedisConnection,
  type RelayRequest,
} from '@webhooks/shared';
import { HttpProblem, notFound } from '../lib/problem.js';
import { problemResponse, problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';

/** The heartbeat's interval, in ms, and the longest one read of the stream blocks. */
export const keepAliveMs = 15_000;

/** Most entries one read takes from the stream. */
const readCount = 100;

/** How long a reply waits in a worker's list for it to read, in ms. */
const replyTtlMs = 60_000;

/** What the routes need. */
export interface ListenOptions {
  /** For the replies and the pending requests (not blocking). */
  redis: RedisConnection;
  /** Opens a connection of a listener's own, which its reads block; closed when it leaves. */
  blocking: () => RedisConnection;
  /** QUEUE_PREFIX (unsharded). */
  prefix: string;
  /** Most listeners one API process streams to at once; past it, 503 with `Retry-After`. */
  maxListeners: number;
  /** LISTEN_MAX_PER_ACCOUNT: most of them one account holds; past it, 503 with `Retry-After`. */
  maxListenersPerAccount: number;
  /** LISTEN_IDLE_MS: a stream that has delivered nothing this long ends, in ms. */
  idleMs: number;
  /** LISTEN_ABANDONED_MS: how long the session counts as listened to after its stream's last read, in ms. */
  abandonedMs: number;
}

/** The relay session of the caller's subscription `id`. @throws HttpProblem 404, or 409 when not `cli` */
async function sessionOf(
  prisma: Parameters<typeof findOwnSubscription>[0],
  accountId: string,
  id: string,
): Promise<string> {
  const subscription = await findOwnSubscription(prisma, accountId, id);
  const session = relaySession(subscription.callbackUrl);
  if (session === null)
    throw new HttpProblem(
      409,
      'conflict',
      'The subscription does not deliver to `webhooks listen` (destination cli)',
    );
  return session;
}

/** The relayed request of one stream entry's fields (`[field, value, …]`). */
export function relayRequestOf(fields: string[]): RelayRequest {
  const value = (name: string) => fields[fields.indexOf(name) + 1] ?? '';
  return {
    request_id: value('request_id'),
    body: value('body'),
    headers: JSON.parse(value('headers') || '{}') as Record<string, string>,
  };
}

const listen: FastifyPluginAsyncTypebox<ListenOptions> = async (app, options) => {
  let listeners = 0;
  /** Open streams per account. */
  const perAccount = new Map<string, number>();
  /** Ends each open stream: the server's close waits for no idle connection but these. */
  const ending = new Set<() => void>();
  app.addHook('onClose', async () => {
    for (const end of ending) end();
  });

  // module.exports is the fastify-plugin-wrapped plugin; its `default` type is the unwrapped one.
  const fastifySse = sse as unknown as FastifyPluginAsync<SSEPluginOptions>;
  await app.register(fastifySse, { heartbeatInterval: keepAliveMs });

  app.get(
    '/api/webhooks/:id/listen',
    {
      sse: { kind: 'only' },
      schema: {
        tags: ['subscriptions'],
        operationId: 'listenToSubscription',
        summary:
          'Stream the deliveries of a cli subscription (server-sent events), as `webhooks listen` does',
        params: SubscriptionParams,
        response: {
          200: {
            description: 'A stream of `delivery` events whose data is `{request_id, body, headers}`',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          409: problemResponse('The subscription does not deliver to `webhooks listen`'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const session = await sessionOf(app.prisma, request.accountId, request.params.id);
      const { accountId } = request;
      const own = perAccount.get(accountId) ?? 0;
      if (own >= options.maxListenersPerAccount)
        throw new HttpProblem(
          503,
          'unavailable',
          `This account has ${own} listen streams open on this API instance, the most it may (LISTEN_MAX_PER_ACCOUNT)`,
          undefined,
          { 'retry-after': '5' },
        );
      if (listeners >= options.maxListeners)
        throw new HttpProblem(503, 'unavailable', 'Too many listeners on this API instance', undefined, {
          'retry-after': '5',
        });
      const { requests, alive } = relayKeys(options.prefix, session);
      // Reads short enough that the session is noted alive well within LISTEN_ABANDONED_MS.
      const blockMs = Math.min(keepAliveMs, Math.floor(options.abandonedMs / 3), options.idleMs);
      const lastEventId = reply.sse.lastEventId;
      let last = lastEventId !== null && /^\d+-\d+$/.test(lastEventId) ? lastEventId : '0';
      listeners += 1;
      perAccount.set(accountId, own + 1);
      const connection = options.blocking();
      let open = true;
      const end = () => {
        open = false;
        connection.disconnect();
      };
      ending.add(end);
      reply.sse.onClose(end);
      let lastDelivered = Date.now();
      async function* deliveries() {
        while (open && Date.now() - lastDelivered < options.idleMs) {
          // While it is read, the reconciler leaves the session's subscription alone.
          await options.redis.set(alive, '1', 'PX', options.abandonedMs);
          const read = (await connection.xread(
            'COUNT',
            readCount,
            'BLOCK',
            blockMs,
            'STREAMS',
            requests,
            last,
          )) as Array<[string, Array<[string, string[]]>]> | null;
          for (const [id, fields] of (open ? read?.[0]?.[1] : undefined) ?? []) {
            yield { id, event: 'delivery', data: relayRequestOf(fields) };
            last = id;
            lastDelivered = Date.now();
          }
        }
      }
      try {
        // The client and any proxy see the stream open before anything is relayed; writeHead
        // alone holds the headers until the first write.
        reply.sse.sendHeaders();
        reply.raw.flushHeaders();
        await reply.sse.send(deliveries());
      } catch (error) {
        if (open) request.log.warn({ err: error }, 'listen stream ended: Redis failed');
      } finally {
        listeners -= 1;
        const left = (perAccount.get(accountId) ?? 1) - 1;
        if (left === 0) perAccount.delete(accountId);
        else perAccount.set(accountId, left);
        ending.delete(end);
        connection.disconnect();
        reply.sse.close();
      }
    },
  );

  app.post(
    '/api/webhooks/:id/listen/replies',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'replyToRelayedDelivery',
        summary: "Answer a relayed delivery with the local app's answer (what `webhooks listen` does)",
        params: SubscriptionParams,
        body: RelayReply,
        response: {
          204: { description: 'Handed to the worker waiting for it', type: 'null' },
          409: problemResponse('The subscription does not deliver to `webhooks listen`'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const session = await sessionOf(app.prisma, request.accountId, request.params.id);
      const { pending } = relayKeys(options.prefix, session);
      const { request_id: requestId } = request.body;
      const repliesKey = await options.redis.hget(pending, requestId);
      if (repliesKey === null)
        throw notFound(`Relayed request ${requestId} (it was answered, or its attempt timed out)`);
      await options.redis
        .multi()
        .lpush(repliesKey, JSON.stringify(request.body))
        .pexpire(repliesKey, replyTtlMs)
        .hdel(pending, requestId)
        .exec();
      return reply.code(204).send(null);
    },
  );
};

export default fp(listen, { name: 'listen' });
