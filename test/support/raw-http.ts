/**
 * A raw HTTP/1.1 client for tests of how the API reads request targets: the path is sent exactly
 * as given (percent-encoding, dot segments, double slashes and absolute-form targets are kept),
 * which `fetch` and Fastify's `inject` would normalise first.
 */
import { request as httpRequest } from 'node:http';

/** An answer as received. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends `method target` to 127.0.0.1:`port` with `headers` and `body`, as written. */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target,
        // Framed by length whatever the method: Node sends a GET body unframed otherwise.
        headers:
          body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
