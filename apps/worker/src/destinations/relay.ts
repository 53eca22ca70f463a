/**
 * The `cli` destination's sender: an attempt joins its session's stream (with this process's replies
 * list noted under its id) and waits for the CLI's reply through the API, at most DELIVERY_TIMEOUT_MS.
 * One connection per process blocks on the replies, only while attempts wait.
 */
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import type { Logger } from 'pino';
import {
  relayKeys,
  relayMaxRequests,
  relayRepliesKey,
  relayRetentionMs,
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
  log: Logger;
}

/** Sends attempts to `cli` destinations. */
export interface RelaySender {
  /** Relays one attempt to `session`; never throws, every failure is in the result. */
  send(session: string, body: string, headers: Record<string, string>): Promise<AttemptResult>;
  close(): void;
}

/** How long one wait on the replies list blocks, in seconds (BLPOP's timeout). */
const blockSeconds = 1;

/** The attempt result of a reply, timed from `startedAt` (performance.now() at `start`). */
export function relayResult(reply: RelayReply | null, startedAt: Date, start: number): AttemptResult {
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
  const waiting = new Map<string, (reply: RelayReply | null) => void>();
  let reader: RedisConnection | null = null;
  let reading = false;
  let closed = false;

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
        const reply = JSON.parse(popped[1]) as RelayReply;
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
      const replied = new Promise<RelayReply | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), options.timeoutMs);
        waiting.set(requestId, (reply) => {
          clearTimeout(timer);
          resolve(reply);
        });
      });
      try {
        await redis
          .multi()
          .hset(keys.pending, requestId, repliesKey)
          .pexpire(keys.pending, relayRetentionMs)
          .xadd(
            keys.requests,
            'MAXLEN',
            '~',
            relayMaxRequests,
            '*',
            'request_id',
            requestId,
            'body',
            body,
            'headers',
            JSON.stringify(headers),
          )
          .pexpire(keys.requests, relayRetentionMs)
          .exec();
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
        waiting.delete(requestId);
      }
    },
    close() {
      closed = true;
      reader?.disconnect();
    },
  };
}
