/**
 * The `cli` destination's sender: an attempt joins its session's stream (with this process's replies
 * list noted under its id) and waits for the CLI's reply through the API, at most DELIVERY_TIMEOUT_MS.
 * The stream holds only attempts still waiting, within RELAY_SESSION_MAX_BYTES: an attempt's entry
 * goes when it ends, and one pushed out by newer ones fails, saying so. One connection per process
 * blocks on the replies, only while attempts wait.
 */
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import type { Logger } from 'pino';
import {
  relayKeys,
  relayMaxRequests,
  relayRepliesKey,
  relayScripts,
  type RedisConnection,
  type RelayReply,
} from '@webhooks/shared';
import { attemptErrorMessages, keptResponseBytes, type AttemptResult } from '../delivery/attempt.js';

/** What {@link createRelaySender} needs. */
export interface RelaySenderOptions {
  /** A producer connection. */
  redis: RedisConnection;
  /** Opens the connection that blocks on the replies list (at the first relayed attempt). */
  blocking: () => RedisConnection;
  /** QUEUE_PREFIX (unsharded). */
  prefix: string;
  /** DELIVERY_TIMEOUT_MS: how long an attempt waits for its reply, in ms. */
  timeoutMs: number;
  /** RELAY_SESSION_MAX_BYTES: most bytes of waiting attempts (bodies and headers) one session holds. */
  maxSessionBytes: number;
  log: Logger;
}

/** A reply as a worker reads it: the CLI's, or the relay's own for an attempt pushed out of its session. */
type ReadReply = RelayReply & { dropped?: true };

/** Why an attempt pushed out of its session failed. */
export const droppedMessage =
  "the relay dropped the attempt unanswered: newer attempts filled its session's bound (RELAY_SESSION_MAX_BYTES, or 1,000 entries)";

/** Why an attempt whose body alone is past the session's bound failed. */
export const tooLargeMessage =
  'the payload and headers are larger than a relay session holds (RELAY_SESSION_MAX_BYTES)';

/** How long a session's keys outlive its last attempt's timeout, in ms. */
const keptAfterTimeoutMs = 60_000;

/** Sends attempts to `cli` destinations. */
export interface RelaySender {
  /** Relays one attempt to `session`; never throws, every failure is in the result. */
  send(session: string, body: string, headers: Record<string, string>): Promise<AttemptResult>;
  close(): void;
}

/** How long one wait on the replies list blocks, in seconds (BLPOP's timeout). */
const blockSeconds = 1;

/** The attempt result of a reply, timed from `startedAt` (performance.now() at `start`). */
export function relayResult(reply: ReadReply | null, startedAt: Date, start: number): AttemptResult {
  const timing = {
    startedAt,
    durationMs: Math.round(performance.now() - start),
    errorDetail: null,
    retryAfterMs: null,
  };
  if (reply === null)
    return {
      ...timing,
      statusCode: null,
      errorClass: 'timeout',
      errorMessage: attemptErrorMessages.timeout,
      responseBody: null,
    };
  if (reply.dropped === true)
    return {
      ...timing,
      statusCode: null,
      errorClass: 'other',
      errorMessage: droppedMessage,
      responseBody: null,
    };
  const responseBody = reply.body === null ? null : reply.body.slice(0, keptResponseBytes);
  if (reply.status === 200)
    return { ...timing, statusCode: 200, errorClass: null, errorMessage: null, responseBody };
  if (reply.status !== null)
    return {
      ...timing,
      statusCode: reply.status,
      errorClass: 'http_status',
      errorMessage: `HTTP ${reply.status}`,
      responseBody,
    };
  const errorClass = reply.error ?? 'other';
  return {
    ...timing,
    statusCode: null,
    errorClass,
    errorMessage: attemptErrorMessages[errorClass],
    responseBody: null,
  };
}

/** Creates the sender of one worker process. */
export function createRelaySender(options: RelaySenderOptions): RelaySender {
  const { redis, prefix, log } = options;
  const repliesKey = relayRepliesKey(prefix, uuidv7());
  const scripts = relayScripts(redis);
  const bounds = {
    maxEntries: relayMaxRequests,
    maxBytes: options.maxSessionBytes,
    ttlMs: options.timeoutMs + keptAfterTimeoutMs,
  };
  const waiting = new Map<string, (reply: ReadReply | null) => void>();
  let reader: RedisConnection | null = null;
  let reading = false;
  let closed = false;

  /** Fails the attempt `requestId` pushed out of its session: at once here, or through its worker's list. */
  const tellDropped = async (requestId: string, list: string) => {
    const reply: ReadReply = {
      request_id: requestId,
      status: null,
      error: 'other',
      body: null,
      dropped: true,
    };
    const local = waiting.get(requestId);
    if (local !== undefined) return local(reply);
    await redis.multi().lpush(list, JSON.stringify(reply)).pexpire(list, keptAfterTimeoutMs).exec();
  };

  /** Reads replies while attempts wait; a reply to nobody (timed out) is dropped. */
  const read = async () => {
    if (reading || closed) return;
    reading = true;
    reader ??= options.blocking();
    try {
      while (waiting.size > 0 && !closed) {
        const popped = await reader.blpop(repliesKey, blockSeconds).catch((error: unknown) => {
          log.debug({ err: error }, 'relay replies not read; trying again');
          return null;
        });
        if (popped === null) continue;
        const reply = JSON.parse(popped[1]) as ReadReply;
        waiting.get(reply.request_id)?.(reply);
      }
    } finally {
      reading = false;
    }
  };

  return {
    async send(session, body, headers) {
      const startedAt = new Date();
      const start = performance.now();
      const requestId = uuidv7();
      const keys = relayKeys(prefix, session);
      let timer: NodeJS.Timeout | undefined;
      const replied = new Promise<ReadReply | null>((resolve) => {
        timer = setTimeout(() => resolve(null), options.timeoutMs);
        waiting.set(requestId, resolve);
      });
      let entryId: string | null = null;
      try {
        const added = await scripts.add(
          keys,
          {
            requestId,
            messageId: headers['webhook-id'] ?? '',
            repliesKey,
            body,
            headers: JSON.stringify(headers),
          },
          bounds,
        );
        if (!added.added)
          return {
            ...relayResult(
              { request_id: requestId, status: null, error: 'other', body: null },
              startedAt,
              start,
            ),
            errorMessage: tooLargeMessage,
          };
        entryId = added.entryId;
        await Promise.all(added.dropped.map((dropped) => tellDropped(dropped.requestId, dropped.repliesKey)));
        void read();
        return relayResult(await replied, startedAt, start);
      } catch (error) {
        log.warn({ err: error, session }, 'relayed attempt not queued');
        return {
          ...relayResult(
            { request_id: requestId, status: null, error: 'other', body: null },
            startedAt,
            start,
          ),
          errorDetail: String(error),
        };
      } finally {
        clearTimeout(timer);
        waiting.delete(requestId);
        // An ended attempt's copy of the body goes at once; the retry brings a new one.
        if (entryId !== null)
          await scripts.remove(keys, entryId, requestId).catch((error: unknown) => {
            log.debug({ err: error, session }, 'relayed attempt left to expire');
          });
      }
    },
    close() {
      closed = true;
      reader?.disconnect();
    },
  };
}
