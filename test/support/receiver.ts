/**
 * A real HTTP receiver on 127.0.0.1 standing in for client applications. Each path has its own
 * script of answers (a status code per request, or `hang` to never answer), and every request is
 * kept with its headers, body and arrival time.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as received. */
export interface ReceivedRequest {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** `Date.now()` at arrival, in ms. */
  at: number;
}

/** A status after a delay (`afterMs`, default none) with an optional body and headers. */
type FullAnswer = {
  status: number;
  afterMs?: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
};

/**
 * An answer: a status, a {@link FullAnswer} (body default `answer <status>`), `hang` (hold the
 * request until the receiver closes), or a function of the request giving one of those.
 */
export type Answer = number | FullAnswer | 'hang' | ((request: ReceivedRequest) => number | FullAnswer);

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: ReceivedRequest[];
  /** Requests to `path`. */
  at(path: string): ReceivedRequest[];
  /** Answers for `path`, in order; the last one repeats. Unscripted paths answer 200. */
  script(path: string, answers: Answer[]): void;
  close(): Promise<void>;
}

/** Starts a receiver on an ephemeral port of 127.0.0.1. */
export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const scripts = new Map<string, Answer[]>();
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const seen = requests.filter((r) => r.path === path).length;
      const received = {
        path,
        method: request.method ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      requests.push(received);
      const script = scripts.get(path) ?? [200];
      const scripted = script[Math.min(seen, script.length - 1)] ?? 200;
      const answer = typeof scripted === 'function' ? scripted(received) : scripted;
      if (answer === 'hang') {
        hanging.add(response);
        return;
      }
      const status = typeof answer === 'number' ? answer : answer.status;
      const reply = () =>
        response
          .writeHead(status, {
            'content-type': 'text/plain',
            ...(typeof answer === 'number' ? {} : answer.headers),
          })
          .end(typeof answer === 'number' ? `answer ${status}` : (answer.body ?? `answer ${status}`));
      if (typeof answer === 'number') reply();
      else setTimeout(reply, answer.afterMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    at: (path) => requests.filter((r) => r.path === path),
    script: (path, answers) => scripts.set(path, answers),
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
