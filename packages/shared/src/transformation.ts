/**
 * Transformations: a subscription's small JavaScript function that reshapes each webhook before it
 * is sent, as Svix's transformations do (https://docs.svix.com/transformations): posting to a Slack
 * or Discord incoming webhook, which expects its own body, say. It is written
 * `function handler(webhook) { …; return webhook; }` and receives
 * `{payload, headers, url, event_type}` (the payload is the body the callback would get); it
 * returns the same shape, changed, or sets `cancel: true` to send nothing.
 *
 * Runs happen in QuickJS compiled to WebAssembly (`transformation-thread.ts`), on a pool of worker
 * threads (piscina), so that a function that loops until its time budget stalls no event loop of
 * the service: the other deliveries go on meanwhile. What comes back is checked here
 * ({@link checkTransformationOutput}): the headers by the custom headers' rules, the URL as an
 * absolute http(s) URL (the attempt's SSRF guard then checks it as it checks every callback).
 */
import { Piscina } from 'piscina';
import Type from 'typebox';
import { checkCustomHeaders } from './custom-headers.js';
import type { TransformationRaw, TransformationTask } from './transformation-thread.js';

/** Longest transformation source, in bytes (16 KiB). */
export const maxTransformationBytes = 16 * 1024;

/** The environment variables of transformations, read by the API (its tests) and the worker. */
export const transformationEnv = {
  TRANSFORMATIONS: Type.Boolean({
    default: true,
    description:
      "Subscriptions' `transformation` functions, run in a QuickJS sandbox on each webhook before it is sent; `false` refuses new ones (400) and fails the attempts of subscriptions that have one",
  }),
  TRANSFORMATION_TIMEOUT_MS: Type.Integer({
    default: 100,
    minimum: 1,
    maximum: 5_000,
    description: 'CPU time one run of a transformation may take, in ms; past it the attempt fails',
  }),
  TRANSFORMATION_MEMORY_MB: Type.Integer({
    default: 16,
    minimum: 1,
    maximum: 1_024,
    description: 'Heap one run of a transformation may use, in MiB; past it the attempt fails',
  }),
  TRANSFORMATION_THREADS: Type.Integer({
    default: 1,
    minimum: 1,
    maximum: 64,
    description: 'Threads of each service running transformations at once, beside its event loop',
  }),
};

/** {@link TransformationLimits} of validated {@link transformationEnv} variables. */
export function transformationLimitsFromEnv(config: {
  TRANSFORMATION_TIMEOUT_MS: number;
  TRANSFORMATION_MEMORY_MB: number;
  TRANSFORMATION_THREADS: number;
}): TransformationLimits {
  return {
    timeoutMs: config.TRANSFORMATION_TIMEOUT_MS,
    memoryBytes: config.TRANSFORMATION_MEMORY_MB * 1024 * 1024,
    threads: config.TRANSFORMATION_THREADS,
  };
}

/** What a transformation receives. */
export interface TransformationInput {
  /** The JSON body the callback would get. */
  payload: unknown;
  /** The custom headers of the subscription (the signature headers are added after). */
  headers: Record<string, string>;
  url: string;
  event_type: string;
}

/** What a run came to: the webhook to send, a cancellation, or why it failed. */
export type TransformationResult =
  | { kind: 'transformed'; payload: unknown; headers: Record<string, string>; url: string }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string };

/**
 * Checks what a function returned: an object with `cancel: true`, or with `payload` (any JSON
 * value), `headers` (an object of strings, which the custom headers' rules must accept) and `url`
 * (an absolute http or https URL, or `inputUrl` unchanged: a broker destination's URI, which a
 * transformation cannot change).
 */
export function checkTransformationOutput(value: unknown, inputUrl: string): TransformationResult {
  const failed = (error: string): TransformationResult => ({ kind: 'failed', error });
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return failed('handler must return the webhook object');
  const { payload, headers, url, cancel } = value as Record<string, unknown>;
  if (cancel === true) return { kind: 'cancelled' };
  if (payload === undefined) return failed('the returned webhook has no payload');
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers))
    return failed('the returned headers must be an object of strings');
  const entries = Object.entries(headers as Record<string, unknown>);
  if (entries.some(([, v]) => typeof v !== 'string'))
    return failed('the returned headers must be an object of strings');
  const checked = checkCustomHeaders(Object.fromEntries(entries) as Record<string, string>);
  if ('problems' in checked) {
    const [problem] = checked.problems;
    return failed(
      `the returned header ${problem!.pointer.slice('/headers/'.length) || 'set'} is refused: ${problem!.detail}`,
    );
  }
  if (typeof url !== 'string') return failed('the returned url must be a string');
  if (url === inputUrl) return { kind: 'transformed', payload, headers: checked.headers, url };
  if (!/^https?:/i.test(inputUrl)) return failed('the url of a broker destination cannot be changed');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return failed('the returned url is not an absolute URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return failed('the returned url must be http or https');
  return { kind: 'transformed', payload, headers: checked.headers, url };
}

/** Limits of one run. */
export interface TransformationLimits {
  /** CPU time a run may take, in ms (TRANSFORMATION_TIMEOUT_MS). */
  timeoutMs: number;
  /** Heap a run may use, in bytes (TRANSFORMATION_MEMORY_BYTES). */
  memoryBytes: number;
  /** Threads running transformations at once. */
  threads: number;
}

/** Runs transformations on a thread pool. */
export interface TransformationRunner {
  /** Runs `source` on `input`; never throws for what the function does. */
  run(source: string, input: TransformationInput): Promise<TransformationResult>;
  /**
   * Why `source` cannot be used (a syntax error, no `handler` function, too long), or null: it is
   * evaluated, so its top level runs under the same limits.
   */
  check(source: string): Promise<string | null>;
  close(): Promise<void>;
}

/** Starts a pool of `limits.threads` threads (each loads QuickJS once, at its first run). */
export function createTransformationRunner(limits: TransformationLimits): TransformationRunner {
  // The thread runs compiled JavaScript: from src/ (tests) and from dist/ alike, dist/ is beside.
  const pool = new Piscina<TransformationTask, TransformationRaw>({
    filename: new URL('../dist/transformation-thread.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: limits.threads,
    idleTimeout: 60_000,
  });
  return {
    async run(source, input) {
      const raw = await pool.run({
        source,
        inputJson: JSON.stringify(input),
        timeoutMs: limits.timeoutMs,
        memoryBytes: limits.memoryBytes,
      });
      if (!raw.ok) return { kind: 'failed', error: `the transformation failed: ${raw.error}` };
      return checkTransformationOutput(raw.value, input.url);
    },
    async check(source) {
      if (Buffer.byteLength(source) > maxTransformationBytes)
        return `longer than ${maxTransformationBytes} bytes`;
      const raw = await pool.run({
        source,
        inputJson: null,
        timeoutMs: limits.timeoutMs,
        memoryBytes: limits.memoryBytes,
      });
      return raw.ok ? null : raw.error;
    },
    close: () => pool.destroy(),
  };
}
