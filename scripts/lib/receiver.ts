/**
 * The one HTTP receiver on 127.0.0.1 standing in for client applications, for the tests, the
 * benchmarks and the demo. Each path has its own script of answers (a status code per request, or
 * `hang` to never answer); a path without a script gets the receiver's default answer (200 unless
 * given). It counts every request, notes the first 200 per `webhook-id` (overall and per path, with
 * its arrival time), and keeps every request with its headers and body unless told not to (a
 * benchmark's hundred thousand deliveries).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback-server.js';

/** One request as received. */
export interface ReceivedRequest {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Arrival time, `Date.now()` in ms: the clock tests take their own timestamps with. */
  at: number;
}

/**
 * A status after a delay (`afterMs`, default none) with an optional body and headers. `heldUntil`:
 * the answer waits until that promise settles (a test lets it go once it has done its part).
 */
export type FullAnswer = {
  status: number;
  afterMs?: number;
  heldUntil?: Promise<unknown>;
  body?: string | Buffer;
  headers?: Record<string, string>;
};

/**
 * An answer: a status, a {@link FullAnswer} (body default `answer <status>`), `hang` (hold the
 * request until the receiver closes), or a function of the request giving one of those.
 */
export type Answer =
  number | FullAnswer | 'hang' | ((request: ReceivedRequest) => number | FullAnswer | 'hang');

/** Options of {@link startReceiver}. */
export interface ReceiverOptions {
  /** The answer of a path without a script (default 200). */
  answer?: Answer;
  /** Keep every request in `requests` (default true); the counters are kept either way. */
  keepRequests?: boolean;
}

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request, in order of arrival (empty with `keepRequests: false`). */
  requests: ReceivedRequest[];
  /** Requests received, kept or not. */
  received: number;
  /**
   * The first arrival answered 200 of each `webhook-id`: id → arrival time in ms since the epoch,
   * sub-ms (`performance.timeOrigin + performance.now()`, the clock the benchmarks time with).
   */
  confirmed: Map<string, number>;
  /** The same per path: path → id → arrival time. */
  confirmedAt: Map<string, Map<string, number>>;
  /** Kept requests to `path`. */
  at(path: string): ReceivedRequest[];
  /**
   * Answers for `path`, one per kept request to it, in order; the last one repeats. Emptying
   * `requests` starts the script again.
   */
  script(path: string, answers: Answer[]): void;
  /** Drops open connections, answers the hanging requests' sockets with a reset, and stops. */
  close(): Promise<void>;
}

/** Starts a receiver on an ephemeral port of 127.0.0.1. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const keep = options.keepRequests ?? true;
  const scripts = new Map<string, Answer[]>();
  const hanging = new Set<ServerResponse>();
  const state = {
    requests: [] as ReceivedRequest[],
    received: 0,
    confirmed: new Map<string, number>(),
    confirmedAt: new Map<string, Map<string, number>>(),
  };

  const confirm = (path: string, webhookId: unknown, at: number) => {
    if (typeof webhookId !== 'string') return;
    if (!state.confirmed.has(webhookId)) state.confirmed.set(webhookId, at);
    const ofPath = state.confirmedAt.get(path) ?? new Map<string, number>();
    state.confirmedAt.set(path, ofPath);
    if (!ofPath.has(webhookId)) ofPath.set(webhookId, at);
  };

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const seen = scripts.has(path) ? state.requests.filter((r) => r.path === path).length : 0;
      const arrivedAt = performance.timeOrigin + performance.now();
      const received: ReceivedRequest = {
        path,
        method: request.method ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      state.received += 1;
      if (keep) state.requests.push(received);
      const script = scripts.get(path);
      const scripted =
        script === undefined ? (options.answer ?? 200) : (script[Math.min(seen, script.length - 1)] ?? 200);
      const answer = typeof scripted === 'function' ? scripted(received) : scripted;
      if (answer === 'hang') {
        hanging.add(response);
        return;
      }
      const full = typeof answer === 'number' ? { status: answer } : answer;
      const reply = () => {
        if (full.status === 200) confirm(path, request.headers['webhook-id'], arrivedAt);
        response
          .writeHead(full.status, { 'content-type': 'text/plain', ...full.headers })
          .end(full.body ?? `answer ${full.status}`);
      };
      const answerNow = () => {
        if (full.afterMs === undefined) reply();
        else setTimeout(reply, full.afterMs);
      };
      if (full.heldUntil === undefined) answerNow();
      else void full.heldUntil.then(answerNow, answerNow);
    });
  });
  const listening = await listenOnLoopback(server);
  return Object.assign(state, {
    url: listening.url,
    at: (path: string) => state.requests.filter((r) => r.path === path),
    script: (path: string, answers: Answer[]) => scripts.set(path, answers),
    async close() {
      for (const response of hanging) response.destroy();
      await listening.close();
    },
  });
}
