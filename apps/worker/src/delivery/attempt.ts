/**
 * One HTTP attempt: POST the payload with one `got` stream instance per worker (retries, redirects and
 * HTTP errors off), keeping 4 KiB of the answer. The SSRF guard (request-filtering-agent) checks each
 * connection's address after resolution over c-ares, which a silent DNS server cannot block as it does
 * `dns.lookup`'s thread pool; ports outside CALLBACK_PORTS are refused before connecting.
 */
import { promises as dns } from 'node:dns';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import CacheableLookup from 'cacheable-lookup';
import got from 'got';
import { HttpProxyAgent, HttpsProxyAgent } from 'hpagent';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import {
  addressAllowed,
  callbackPort,
  portAllowed,
  type AwsCredentials,
  type CallbackPolicy,
  type ClientCertificate,
} from '@webhooks/shared';
import { parseRetryAfter } from './backoff.js';

/** Most bytes of a callback's answer kept for the delivery log (4 KiB). */
export const keptResponseBytes = 4096;

/** Why an attempt got no HTTP answer, or why the answer did not confirm. */
export type AttemptErrorClass =
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns'
  | 'blocked_address'
  | 'http_status'
  | 'transformation_failed'
  | 'auth_failed'
  | 'broker_unavailable'
  | 'broker_refused'
  | 'broker_unroutable'
  | 'broker_throttled'
  | 'other';

/** Classes whose log message is a fixed sentence: all but an HTTP status and a transformation's or token's failure. */
export type RequestErrorClass = Exclude<
  AttemptErrorClass,
  'http_status' | 'transformation_failed' | 'auth_failed'
>;

/** What one attempt came to. */
export interface AttemptResult {
  startedAt: Date;
  /** Milliseconds from sending to the end of the answer, or to the error. */
  durationMs: number;
  /** HTTP status of the answer; null when there was none (always, for a broker destination). */
  statusCode: number | null;
  /** null when the callback answered 200, or the broker confirmed the message. */
  errorClass: AttemptErrorClass | null;
  /** `HTTP <status>` or a fixed sentence per class: no address, so the log cannot probe the worker's network. */
  errorMessage: string | null;
  /** The request library's own message (addresses, host names): for operator logs only, never stored. */
  errorDetail: string | null;
  /** The answer's first {@link keptResponseBytes} bytes as valid UTF-8 without NUL; null without an answer. */
  responseBody: string | null;
  /** The wait a 429 or 503 answer asked for with `Retry-After`, in ms; null otherwise. */
  retryAfterMs: number | null;
}

const unreachableAddressMessage =
  'the callback host does not resolve to an address this service delivers to (public, on an allowed port and range)';

/** The log's message per error class: fixed, since the library's name addresses and tell open ports from closed. */
export const attemptErrorMessages: Record<RequestErrorClass, string> = {
  timeout: 'the callback did not answer in time',
  connection_refused: 'the callback refused the connection',
  connection_reset: 'the connection to the callback was closed before it answered',
  // One sentence for both, or the log would tell whether an internal name resolves.
  dns: unreachableAddressMessage,
  blocked_address: unreachableAddressMessage,
  other: 'the request to the callback failed',
  broker_unavailable: 'the broker could not be reached',
  broker_refused: 'the broker refused the message',
  broker_unroutable: 'the broker routed the message to no queue',
  broker_throttled: 'the destination throttled the write',
};

/** HTTP statuses whose `Retry-After` is honoured (RFC 9110 section 10.2.3, RFC 6585 section 4). */
const retryAfterStatuses = new Set([429, 503]);

export interface AttemptSenderOptions {
  /** Whole-request timeout in ms (DELIVERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Where callbacks may point (`callback-policy.ts` in @webhooks/shared). */
  policy: CallbackPolicy;
  /** Sockets kept per callback host, for keep-alive; default 256. */
  maxSockets?: number;
  /** The `User-Agent` header. */
  userAgent: string;
  /** DNS servers (`host` or `host:port`) resolving callback hosts (DNS_SERVERS); the system's when empty. */
  dnsServers?: string[];
  /** Timeout of one DNS query, in ms (DNS_TIMEOUT_MS); default 2000. */
  dnsTimeoutMs?: number;
  /** Certificate authorities trusted besides Node's (CALLBACK_CA_FILE, PEM): receivers on a private PKI. */
  extraCertificateAuthorities?: string;
  /**
   * DELIVERY_PROXY_URL: every attempt goes through this forward proxy (CONNECT, hpagent). The host's
   * addresses are checked ({@link addressAllowed}) first and the proxy is asked for the checked
   * address, the name travelling as `Host` and SNI, so the proxy's DNS cannot redirect it.
   */
  proxyUrl?: string;
}

/** Whose attempt a send is: the subscription's account, the subscription, the delivery and its event. */
export interface DeliveryRef {
  accountId: string;
  subscriptionId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  /** When the event occurred: the same on every attempt (S3 keys' dates). */
  occurredAt: Date;
  /** An AWS destination's customer-owned credentials; absent or null: the deployment's own. */
  awsCredentials?: AwsCredentials | null;
}

/** Sends attempts over one keep-alive agent pair shared by the whole worker. */
export interface AttemptSender {
  /**
   * POSTs `body` to `url`; never throws. A reset on a reused kept-alive connection before any answer is
   * sent again (at most {@link maxStaleResends}). `clientCertificate`: mutual TLS, pooled apart.
   */
  send(
    url: string,
    body: string,
    headers: Record<string, string>,
    clientCertificate?: ClientCertificate | null,
    delivery?: DeliveryRef,
  ): Promise<AttemptResult>;
  /**
   * A request that is not an attempt (an OAuth 2.0 token request) under the same rules, body read up
   * to {@link maxFetchedBytes}; fetch-compatible, for oauth4webapi's `customFetch`.
   * @throws RefusedTargetError for a refused port or address, got's errors for a failed request
   */
  fetch(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<Response>;
  /** Closes the kept-alive sockets. */
  close(): void;
}

/** The most of an answer {@link AttemptSender.fetch} reads, in bytes (64 KiB). */
export const maxFetchedBytes = 64 * 1024;

/** A port outside CALLBACK_PORTS, or (through the proxy) a refused address: refused before connecting. */
class RefusedTargetError extends Error {
  override name = 'RefusedTargetError';
}

/** Sorts a request error into the delivery log's error classes. */
export function classifyError(error: unknown): RequestErrorClass {
  if (error instanceof RefusedTargetError) return 'blocked_address';
  const {
    code,
    name,
    message,
    syscall: ownSyscall,
    cause,
  } = error as {
    code?: string;
    name?: string;
    message?: string;
    syscall?: string;
    cause?: { syscall?: string };
  };
  // c-ares reports failures from `query*` on the error or its cause.
  const syscall = ownSyscall ?? cause?.syscall ?? '';
  if (syscall.startsWith('query') || syscall === 'getaddrinfo') return 'dns';
  if (name === 'TimeoutError' || code === 'ETIMEDOUT') return 'timeout';
  if (/is not allowed\. Because/.test(message ?? '')) return 'blocked_address';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  return 'other';
}

/** Resends of one attempt after resets on reused connections (each retires a stale one). */
const maxStaleResends = 3;

/** Creates the worker's HTTP sender. */
export function createAttemptSender(options: AttemptSenderOptions): AttemptSender {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? 256,
    allowPrivateIPAddress: options.policy.allowPrivate,
    denyIPAddressList: [...options.policy.denyCidrs],
  };
  const { proxyUrl } = options;
  const agent =
    proxyUrl === undefined
      ? {
          http: new RequestFilteringHttpAgent(agentOptions),
          https: new RequestFilteringHttpsAgent(agentOptions),
        }
      : {
          http: new HttpProxyAgent({ ...agentOptions, proxy: proxyUrl }),
          https: new HttpsProxyAgent({ ...agentOptions, proxy: proxyUrl }),
        };
  const resolver = new dns.Resolver({ timeout: options.dnsTimeoutMs ?? 2_000, tries: 2 });
  if (options.dnsServers !== undefined && options.dnsServers.length > 0)
    resolver.setServers(options.dnsServers);
  const dnsCache = new CacheableLookup({ resolver });
  /**
   * Through the proxy, the SSRF check of every address the callback host resolves to.
   * @returns `target` with its host replaced by the first address checked
   * @throws the resolver's error (classified `dns`), or RefusedTargetError naming the address
   */
  const checkedAddress = async (target: URL): Promise<URL> => {
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const addresses =
      isIP(host) === 0 ? await dnsCache.lookupAsync(host, { all: true }) : [{ address: host }];
    const refused = addresses.find(({ address }) => !addressAllowed(options.policy, address));
    if (refused !== undefined) throw new RefusedTargetError(`address ${refused.address} is not allowed`);
    const { address } = addresses[0]!;
    const to = new URL(target);
    to.hostname = isIP(address) === 6 ? `[${address}]` : address;
    return to;
  };
  // Built once: what every attempt shares is merged here, not per request.
  const client = got.extend({
    agent,
    // Through a proxy, the proxy resolves the callback's name; the worker resolves it only to check it.
    ...(proxyUrl === undefined ? { dnsCache } : {}),
    retry: { limit: 0 },
    followRedirect: false,
    throwHttpErrors: false,
    decompress: false,
    headers: { 'user-agent': options.userAgent },
    ...(options.extraCertificateAuthorities === undefined
      ? {}
      : { https: { certificateAuthority: [...rootCertificates, options.extraCertificateAuthorities] } }),
  });
  const send = (
    url: string,
    body: string,
    headers: Record<string, string>,
    clientCertificate: ClientCertificate | null = null,
    first = { startedAt: new Date(), start: performance.now(), resends: 0 },
  ) =>
    new Promise<AttemptResult>((resolve) => {
      const { startedAt, start } = first;
      let reusedSocket = false;
      const chunks: Buffer[] = [];
      let kept = 0;
      let statusCode: number | null = null;
      let retryAfterMs: number | null = null;
      let settled = false;
      const finish = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (
          error !== undefined &&
          reusedSocket &&
          statusCode === null &&
          classifyError(error) === 'connection_reset' &&
          first.resends < maxStaleResends &&
          performance.now() - start < options.timeoutMs
        ) {
          // A kept-alive connection closed as the pool reused it: never answered, most likely never
          // read. Sent again within the attempt (Node's `request.reusedSocket` pattern); same webhook-id.
          resolve(send(url, body, headers, clientCertificate, { ...first, resends: first.resends + 1 }));
          return;
        }
        const errorClass =
          error !== undefined ? classifyError(error) : statusCode === 200 ? null : 'http_status';
        resolve({
          startedAt,
          durationMs: Math.round(performance.now() - start),
          statusCode,
          errorClass,
          errorMessage:
            errorClass === null
              ? null
              : errorClass === 'http_status'
                ? `HTTP ${statusCode}`
                : attemptErrorMessages[errorClass],
          errorDetail: error !== undefined ? String((error as Error).message).slice(0, 1024) : null,
          // Decoding replaces invalid UTF-8; NUL goes too, or PostgreSQL would refuse the record.
          responseBody:
            statusCode === null ? null : Buffer.concat(chunks).toString('utf8').replaceAll('\u0000', ''),
          retryAfterMs,
        });
      };
      let target: URL;
      try {
        target = new URL(url);
      } catch (error) {
        finish(error);
        return;
      }
      const port = callbackPort(target);
      if (!portAllowed(options.policy, port)) {
        finish(new RefusedTargetError(`port ${port} is not in CALLBACK_PORTS`));
        return;
      }
      /** Sends to `to`; `host` is the callback's name when `to` names the checked address (its `Host` and SNI). */
      const post = (to: URL, host?: string) => {
        // The attempt's whole time, resends included, stays within DELIVERY_TIMEOUT_MS.
        const remainingMs = Math.max(1, Math.round(options.timeoutMs - (performance.now() - start)));
        const stream = client.stream.post(to, {
          body,
          headers: host === undefined ? headers : { ...headers, host },
          timeout: { request: remainingMs },
          ...(clientCertificate === null
            ? {}
            : { https: { certificate: clientCertificate.certificate, key: clientCertificate.key } }),
        });
        stream.on('request', (request: ClientRequest) => {
          request.on('socket', () => {
            reusedSocket = request.reusedSocket;
          });
        });
        stream.on('response', (response: IncomingMessage) => {
          statusCode = response.statusCode ?? null;
          if (statusCode !== null && retryAfterStatuses.has(statusCode))
            retryAfterMs = parseRetryAfter(response.headers['retry-after'], new Date());
        });
        stream.on('data', (chunk: Buffer) => {
          if (kept < keptResponseBytes) {
            chunks.push(chunk.subarray(0, keptResponseBytes - kept));
            kept += chunk.length;
          }
          // The rest of an oversized answer is not worth reading: the status is known already.
          if (kept >= keptResponseBytes) {
            finish();
            stream.destroy();
          }
        });
        stream.on('end', () => finish());
        stream.on('error', (error: Error) => finish(error));
      };
      if (proxyUrl !== undefined) {
        checkedAddress(target).then((to) => post(to, target.host), finish);
        return;
      }
      post(target);
    });

  return {
    send: (url, body, headers, clientCertificate) => send(url, body, headers, clientCertificate),
    async fetch(url, init) {
      const target = new URL(url);
      const port = callbackPort(target);
      if (!portAllowed(options.policy, port))
        throw new RefusedTargetError(`port ${port} is not in CALLBACK_PORTS`);
      const to = proxyUrl === undefined ? target : await checkedAddress(target);
      const request = client(to, {
        method: init.method as 'POST',
        headers: to === target ? init.headers : { ...init.headers, host: target.host },
        ...(init.body === undefined ? {} : { body: init.body }),
        timeout: { request: options.timeoutMs },
      });
      request.on('downloadProgress', (progress: { transferred: number }) => {
        if (progress.transferred > maxFetchedBytes) request.cancel(`answer over ${maxFetchedBytes} bytes`);
      });
      const response = await request;
      const headers = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (typeof value === 'string') headers.set(name, value);
      }
      const body = response.statusCode === 204 ? null : new Uint8Array(response.rawBody);
      return new Response(body, { status: response.statusCode, headers });
    },
    close() {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
}
