/**
 * The `cli` destination (`cli://<session>`): deliveries relayed to `webhooks listen` through the
 * service. The worker adds each attempt to the session's Redis stream and waits; the API streams it
 * to the CLI as server-sent events and takes the local app's answer back to the worker.
 */
import Type, { type Static } from 'typebox';
import type { RedisConnection } from '@webhooks/publisher';

/** The environment variables of the relay, read by the API (streams) and the worker (attempts, sweeps). */
export const relayEnv = {
  LISTEN_ABANDONED_MS: Type.Integer({
    default: 600_000,
    minimum: 1_000,
    description:
      'How long a `webhooks listen` subscription (destination cli) lives without its stream, in ms: the reconciler then deletes it, as the CLI does when it exits',
  }),
  RELAY_SESSION_MAX_BYTES: Type.Integer({
    default: 4_194_304,
    minimum: 65_536,
    description:
      'Most bytes of unanswered attempts (bodies and headers) one `webhooks listen` session holds in Redis: past it the oldest are dropped and their attempts fail, saying so',
  }),
  LISTEN_MAX_PER_ACCOUNT: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Most `webhooks listen` streams one account holds open on one API process (503 with `Retry-After` past it), so that no account takes every stream',
  }),
  LISTEN_IDLE_MS: Type.Integer({
    default: 1_800_000,
    minimum: 1_000,
    description:
      'How long a `webhooks listen` stream stays open with nothing to deliver, in ms; the CLI then connects again, so an idle stream cannot hold a slot for ever',
  }),
};

/** The stored `callback_url` of a relay session. */
export function relayUrl(session: string): string {
  return `cli://${session}`;
}

/** The session a stored `callback_url` names, or null when it is not a `cli` destination. */
export function relaySession(callbackUrl: string): string | null {
  return callbackUrl.startsWith('cli://') ? callbackUrl.slice('cli://'.length) : null;
}

/**
 * Redis keys of one session, in one hash slot (under QUEUE_PREFIX, not sharded):
 * - `requests`: stream of the attempts still waiting for the CLI's answer, capped at
 *   {@link relayMaxRequests} entries and RELAY_SESSION_MAX_BYTES; an attempt's entry goes when it ends;
 * - `bytes`: the sum of those entries' sizes (body and headers, in bytes);
 * - `pending`: hash of request id → the replies list of the worker waiting for it;
 * - `alive`: set while a stream reads the session, expiring LISTEN_ABANDONED_MS after the last read.
 * The first three expire a minute after the last attempt's timeout (a worker that died leaves them).
 */
export function relayKeys(prefix: string, session: string) {
  const base = `${prefix}:relay:{${session}}`;
  return {
    requests: `${base}:requests`,
    bytes: `${base}:bytes`,
    pending: `${base}:pending`,
    alive: `${base}:alive`,
  };
}

/**
 * Deletes every key of `session` (its subscription is gone): copies of bodies go at once, and the
 * attempts still waiting time out. @throws ioredis' errors
 */
export async function dropRelaySession(
  redis: RedisConnection,
  prefix: string,
  session: string,
): Promise<void> {
  const keys = relayKeys(prefix, session);
  await redis.del(keys.requests, keys.bytes, keys.pending, keys.alive);
}

/** The list a worker process reads its relayed attempts' replies from. */
export function relayRepliesKey(prefix: string, listener: string): string {
  return `${prefix}:relay:replies:{${listener}}`;
}

/** Most requests a session's stream keeps (the oldest go first). */
export const relayMaxRequests = 1_000;

/** One relayed attempt as the API streams it (`data` of a `delivery` event). */
export interface RelayRequest {
  /** The request's id: the reply names it. */
  request_id: string;
  /** The signed JSON payload, exactly as it would be POSTed. */
  body: string;
  /** The Standard Webhooks and custom headers. */
  headers: Record<string, string>;
}

/** The local app's answer as the CLI replies it (`…/listen/replies`): `status` null when none, `error` why. */
export const RelayReply = Type.Object(
  {
    request_id: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'The `request_id` of the delivery event',
    }),
    status: Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Null()], {
      description: "The local app's HTTP status; null when it gave none",
    }),
    error: Type.Union(
      [Type.Literal('connection_refused'), Type.Literal('timeout'), Type.Literal('other'), Type.Null()],
      { description: 'Why there is no status' },
    ),
    body: Type.Union([Type.String({ maxLength: 65_536 }), Type.Null()], {
      description: "The start of the local app's answer (4 KiB are kept)",
    }),
  },
  { additionalProperties: false },
);
export type RelayReply = Static<typeof RelayReply>;
