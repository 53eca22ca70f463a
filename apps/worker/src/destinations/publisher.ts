/**
 * The interface of broker destinations, beside the HTTP attempt: one publisher per broker, turning a
 * publish into the {@link AttemptResult} the attempt path records, so every rule after is the HTTP
 * attempt's. A result without an error class means the broker confirmed the message.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { BrokerTarget } from '@webhooks/shared';
import {
  attemptErrorMessages,
  type RequestErrorClass,
  type AttemptResult,
  type DeliveryRef,
} from '../delivery/attempt.js';

/** What a publisher is made from: one broker of DESTINATION_BROKERS. */
export interface PublisherOptions {
  /** The broker's URL, credentials included. */
  url: string;
  /** DELIVERY_TIMEOUT_MS: a publish's whole time, connecting included, in ms. */
  timeoutMs: number;
  /** SQS: the broker's AWS region. */
  region?: string;
  log: Logger;
}

/** Publishes to one broker. */
export interface BrokerPublisher {
  /**
   * Publishes `body` (the signed payload) with `headers` and waits for the broker's confirmation; never
   * throws. `delivery.deliveryId` is the message id, the same on every attempt.
   */
  publish(
    target: BrokerTarget,
    body: string,
    headers: Record<string, string>,
    delivery: DeliveryRef,
  ): Promise<AttemptResult>;
  /** Closes the broker connection. */
  close(): Promise<void>;
}

/** Times one publish and builds its result. */
export function publishClock() {
  const startedAt = new Date();
  const start = performance.now();
  const result = (
    errorClass: RequestErrorClass | null,
    message?: string,
    detail?: unknown,
  ): AttemptResult => ({
    startedAt,
    durationMs: Math.round(performance.now() - start),
    statusCode: null,
    errorClass,
    errorMessage: errorClass === null ? null : (message ?? attemptErrorMessages[errorClass]),
    errorDetail: detail === undefined ? null : String((detail as Error).message ?? detail).slice(0, 1024),
    responseBody: null,
    retryAfterMs: null,
  });
  return {
    confirmed: () => result(null),
    failed: result,
    /** Milliseconds left of `timeoutMs` since the publish started. */
    remainingMs: (timeoutMs: number) => Math.max(1, Math.round(timeoutMs - (performance.now() - start))),
  };
}

/** The timer and result builder of one publish ({@link publishClock}). */
export type PublishClock = ReturnType<typeof publishClock>;

/** One publish by `send` within `timeoutMs`: no connection is `broker_unavailable`, no answer `timeout`. */
export function publishWithin<S>(
  session: { get(): Promise<S> },
  timeoutMs: number,
  clock: PublishClock,
  timeoutMessage: string,
  send: (current: S) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const attempt = async () => {
    let current: S;
    try {
      current = await session.get();
    } catch (error) {
      return clock.failed('broker_unavailable', undefined, error);
    }
    return send(current);
  };
  return withDeadline(attempt(), timeoutMs, () => clock.failed('timeout', timeoutMessage));
}

/** Resolves with `promise`, or with `onTimeout()` after `ms`. */
function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(onTimeout()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A broker connection opened at first use, and again after it was lost (`open` calls `lost`).
 * `close` closes an open one; closing one never opened or closed already is ignored.
 */
export function lazyConnection<S>(
  open: (lost: () => void) => Promise<S>,
  close: (session: S) => Promise<void>,
) {
  let session: Promise<S> | null = null;
  return {
    /** The open connection; rejects with the error of a failed opening, which the next use retries. */
    get(): Promise<S> {
      if (session === null) {
        const lost = () => {
          if (session === opening) session = null;
        };
        const opening = open(lost);
        session = opening;
        opening.catch(lost);
      }
      return session;
    },
    async close() {
      const current = session;
      session = null;
      if (current === null) return;
      try {
        await close(await current);
      } catch {
        // Closing what was never opened, or is closed already.
      }
    },
  };
}
