/**
 * Transformations: a subscription's JavaScript `function handler(webhook)` that reshapes
 * `{payload, headers, url, event_type}` before it is sent, or sets `cancel: true`, as Svix's do
 * (docs.svix.com/transformations). Settings and the check of a result; `transformation-runner.ts` runs it.
 */
import Type from 'typebox';
import type { CallbackPolicy } from './callback-policy.js';
import { checkCallbackUrl } from './callback-url.js';
import { checkCustomHeaders } from './custom-headers.js';

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
    description:
      'Time one run of a transformation may take on its thread, in ms; past it the run is ended (its thread too, when QuickJS cannot stop it) and the attempt fails',
  }),
  TRANSFORMATION_MEMORY_MB: Type.Integer({
    default: 16,
    minimum: 1,
    maximum: 1_024,
    description:
      "Heap one run of a transformation may use, in MiB; past it the attempt fails. Each thread's WebAssembly memory is capped at this plus 20 MiB",
  }),
  TRANSFORMATION_THREADS: Type.Integer({
    default: 1,
    minimum: 1,
    maximum: 64,
    description: 'Threads of each service running transformations at once, beside its event loop',
  }),
  TRANSFORMATION_MAX_BODY_BYTES: Type.Integer({
    default: 512 * 1024,
    minimum: 1024,
    maximum: 16 * 1024 * 1024,
    description:
      'Longest webhook a transformation may return (payload, headers and URL as JSON), in bytes; past it the attempt fails',
  }),
  TRANSFORMATION_QUEUE_TIMEOUT_MS: Type.Integer({
    default: 2_000,
    minimum: 1,
    maximum: 60_000,
    description:
      'How long a run may wait for a thread, in ms; past it the delivery waits and tries again later without using an attempt (the API answers 503)',
  }),
  TRANSFORMATION_ACCOUNT_CONCURRENCY: Type.Integer({
    default: 2,
    minimum: 1,
    maximum: 64,
    description:
      "Runs of one account's transformations on or waiting for a thread at once, in each service, and always below the pool's two runs a thread; its other runs wait behind its own",
  }),
  TRANSFORMATION_MAX_QUEUE: Type.Integer({
    default: 256,
    minimum: 1,
    maximum: 100_000,
    description:
      'Runs waiting for a thread in each service, all accounts together; past it a run waits and tries again later',
  }),
};

/** {@link TransformationLimits} of validated {@link transformationEnv} variables. */
export function transformationLimitsFromEnv(config: {
  TRANSFORMATION_TIMEOUT_MS: number;
  TRANSFORMATION_MEMORY_MB: number;
  TRANSFORMATION_THREADS: number;
  TRANSFORMATION_MAX_BODY_BYTES: number;
  TRANSFORMATION_QUEUE_TIMEOUT_MS: number;
  TRANSFORMATION_ACCOUNT_CONCURRENCY: number;
  TRANSFORMATION_MAX_QUEUE: number;
}): TransformationLimits {
  return {
    timeoutMs: config.TRANSFORMATION_TIMEOUT_MS,
    memoryBytes: config.TRANSFORMATION_MEMORY_MB * 1024 * 1024,
    threads: config.TRANSFORMATION_THREADS,
    maxOutputBytes: config.TRANSFORMATION_MAX_BODY_BYTES,
    queueTimeoutMs: config.TRANSFORMATION_QUEUE_TIMEOUT_MS,
    accountConcurrency: config.TRANSFORMATION_ACCOUNT_CONCURRENCY,
    maxQueue: config.TRANSFORMATION_MAX_QUEUE,
  };
}

/** Limits of the runs, from {@link transformationEnv}. */
export interface TransformationLimits {
  /** Time one run may take on its thread, in ms (TRANSFORMATION_TIMEOUT_MS). */
  timeoutMs: number;
  /** QuickJS heap of one run, in bytes (TRANSFORMATION_MEMORY_MB). */
  memoryBytes: number;
  /** Threads running transformations at once (TRANSFORMATION_THREADS). */
  threads: number;
  /** Longest returned webhook, JSON, in bytes (TRANSFORMATION_MAX_BODY_BYTES). */
  maxOutputBytes: number;
  /** Longest wait for a thread, in ms (TRANSFORMATION_QUEUE_TIMEOUT_MS). */
  queueTimeoutMs: number;
  /** One account's runs on or waiting for a thread (TRANSFORMATION_ACCOUNT_CONCURRENCY). */
  accountConcurrency: number;
  /** Runs waiting for a thread, all accounts (TRANSFORMATION_MAX_QUEUE). */
  maxQueue: number;
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

/**
 * What a run came to: a webhook, a cancellation, a failure (the function's: the attempt fails), or
 * `busy` (no thread in time, the service's: the delivery waits `retryAfterMs` unspent, the API answers 503).
 */
export type TransformationResult =
  | { kind: 'transformed'; payload: unknown; headers: Record<string, string>; url: string }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string }
  | TransformationBusy;

/** No thread was free in time; try again after `retryAfterMs` (ms). */
export interface TransformationBusy {
  kind: 'busy';
  retryAfterMs: number;
  reason: string;
}

/**
 * Checks a returned value: `cancel: true`, or `payload` (JSON), `headers` (strings the custom-header
 * rules accept) and `url` (unchanged, or a valid `callback_url` under `policy` keeping the origin
 * where callbacks are verified; a broker destination's cannot change).
 */
export function checkTransformationOutput(
  value: unknown,
  inputUrl: string,
  policy: CallbackPolicy,
): TransformationResult {
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
  const refused = checkCallbackUrl(url, policy, '/url');
  if (refused !== null) return failed(`the returned url ${refused.detail}`);
  if (policy.verification === true && new URL(url).origin !== new URL(inputUrl).origin)
    return failed(
      `the returned url must keep the callback's verified origin ${new URL(inputUrl).origin} (CALLBACK_VERIFICATION=challenge)`,
    );
  return { kind: 'transformed', payload, headers: checked.headers, url };
}
