/**
 * The `cli` destination (`cli://<session>`): deliveries relayed to `webhooks listen` through the
 * service. The worker adds each attempt to the session's Redis stream and waits; the API streams it
 * to the CLI as server-sent events and takes the local app's answer back to the worker.
 */
import Type, { type Static } from 'typebox';

/** The environment variable of the relay, read by the API (which notes a stream alive) and the worker (which sweeps). */
export const relayEnv = {
  LISTEN_ABANDONED_MS: Type.Integer({
    default: 600_000,
    minimum: 1_000,
    description:
      'How long a `webhooks listen` subscription (destination cli) lives without its stream, in ms: the reconciler then deletes it, as the CLI does when it exits',
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
 * - `requests`: stream of the attempts waiting for the CLI, capped at {@link relayMaxRequests};
 * - `pending`: hash of request id → the replies list of the worker waiting for it;
 * - `alive`: set while a stream reads the session, expiring LISTEN_ABANDONED_MS after the last read.
 * The first two expire {@link relayRetentionMs} after the last attempt.
 */
export function relayKeys(prefix: string, session: string) {
  const base = `${prefix}:relay:{${session}}`;
  return { requests: `${base}:requests`, pending: `${base}:pending`, alive: `${base}:alive` };
}

/** The list a worker process reads its relayed attempts' replies from. */
export function relayRepliesKey(prefix: string, listener: string): string {
  return `${prefix}:relay:replies:{${listener}}`;
}

/** How long a session's requests are kept after its last attempt, in ms (an hour). */
export const relayRetentionMs = 3_600_000;

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
