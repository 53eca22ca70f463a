/**
 * Runs transformations on a piscina pool, each in QuickJS (`transformation-thread.ts`), so no run
 * stalls an event loop. The host bounds each run from outside: a deadline from its start (then
 * piscina ends the thread), a bound on the wait for a thread, and fair slots per account (`fair-slots.ts`).
 */
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { createFairSlots } from './fair-slots.js';
import type { CallbackPolicy } from './callback-policy.js';
import {
  checkTransformationOutput,
  maxTransformationBytes,
  type TransformationBusy,
  type TransformationInput,
  type TransformationLimits,
  type TransformationResult,
} from './transformation.js';
import type {
  TransformationRaw,
  TransformationTask,
  TransformationThreadData,
} from './transformation-thread.js';

/** What a check of a source came to: usable, refused (why), or no thread free in time. */
export type TransformationCheck = { kind: 'valid' } | { kind: 'refused'; error: string } | TransformationBusy;

/** Runs transformations on a thread pool. */
export interface TransformationRunner {
  /**
   * Runs `source` on `input` for `accountId`; never throws for what the function does. Past
   * TRANSFORMATION_TIMEOUT_MS, its heap or …_MAX_BODY_BYTES: `failed`, naming the limit; no thread
   * within TRANSFORMATION_QUEUE_TIMEOUT_MS: `busy`.
   */
  run(source: string, input: TransformationInput, accountId: string): Promise<TransformationResult>;
  /** Whether `source` can be used; it is evaluated, so its top level runs under the same limits. */
  check(source: string, accountId: string): Promise<TransformationCheck>;
  close(): Promise<void>;
}

/** How long past its deadline a run may go before the thread is ended (ms): the interrupt's error is clearer. */
const hostGraceMs = 25;

/** Longest wait for a thread that is starting (loading QuickJS), in ms. */
const threadStartTimeoutMs = 30_000;

/** Runs handed to a thread at once (the current and the next), so it never waits for this loop between two. */
const runsPerThread = 2;

/** The reasons a run's signal fires with. */
const queueTimedOut = 'queue timed out';
const ranPastDeadline = 'ran past its deadline';

/** What a run's escaped error says, as the sandbox would put it: its kind and message, one line. */
function escapedMessage(error: unknown): string {
  if (error instanceof SyntaxError) return 'its output is not JSON';
  if (error instanceof RangeError) return 'its output is nested too deeply';
  return `its run ended abnormally (${String((error as Error).message ?? error).slice(0, 200)})`;
}

/** A pool of `limits.threads` threads, started at the first run; a result's URL is checked against `policy`. */
export function createTransformationRunner(
  limits: TransformationLimits,
  policy: CallbackPolicy,
): TransformationRunner {
  // The thread runs compiled JavaScript: from src/ (tests) and from dist/ alike, dist/ is beside.
  const workerData: TransformationThreadData = { memoryBytes: limits.memoryBytes };
  // Made at the first run; an ended thread is replaced at once (piscina's minimum) for the run behind it.
  let pool: Piscina<TransformationTask, TransformationRaw> | undefined;
  const poolOf = () =>
    (pool ??= new Piscina<TransformationTask, TransformationRaw>({
      filename: new URL('../dist/transformation-thread.js', import.meta.url).href,
      minThreads: limits.threads,
      maxThreads: limits.threads,
      idleTimeout: Infinity,
      workerData,
    }));
  const slots = createFairSlots({
    capacity: limits.threads * runsPerThread,
    // Below the whole pool, so one account never holds every slot.
    perAccount: Math.max(1, Math.min(limits.accountConcurrency, limits.threads * runsPerThread - 1)),
    // Half the queue at most per account: the other half stays for the others.
    waitingPerAccount: Math.max(limits.accountConcurrency, Math.floor(limits.maxQueue / 2)),
    maxWaiting: limits.maxQueue,
  });
  const refusals = {
    'account-full': "too many of this account's transformations are waiting for a thread",
    full: 'too many transformations are waiting for a thread',
    aborted: 'no transformation thread was free in time',
  } as const;
  const busy = (reason: string): TransformationBusy => ({
    kind: 'busy',
    retryAfterMs: limits.queueTimeoutMs,
    reason,
  });

  /** Resolves once a trivial run has ended on the pool (a thread is up), at most after the thread start's bound. */
  const restarted = async () => {
    const { port1, port2 } = new MessageChannel();
    const task = {
      source: 'function handler(w) { return w; }',
      inputJson: null,
      timeoutMs: limits.timeoutMs,
    };
    const run = poolOf()
      .run({ ...task, maxOutputBytes: limits.maxOutputBytes, started: port2 }, { transferList: [port2] })
      .catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([run, new Promise((resolve) => (timer = setTimeout(resolve, threadStartTimeoutMs)))]);
    clearTimeout(timer);
    port1.close();
  };

  /** One run under the account's slot and the host's deadlines. */
  const execute = async (
    accountId: string,
    source: string,
    inputJson: string | null,
  ): Promise<TransformationRaw | TransformationBusy> => {
    const controller = new AbortController();
    let timer = setTimeout(() => controller.abort(queueTimedOut), limits.queueTimeoutMs);
    const release = await slots.acquire(accountId, controller.signal);
    clearTimeout(timer);
    if (typeof release === 'string') return busy(refusals[release]);
    // A slot means a thread free or one run from it, unless it is still starting: that wait has its own bound.
    timer = setTimeout(() => controller.abort(queueTimedOut), threadStartTimeoutMs);
    const { port1, port2 } = new MessageChannel();
    port1.once('message', () => {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(ranPastDeadline), limits.timeoutMs + hostGraceMs);
    });
    try {
      return await poolOf().run(
        {
          source,
          inputJson,
          timeoutMs: limits.timeoutMs,
          maxOutputBytes: limits.maxOutputBytes,
          started: port2,
        },
        { signal: controller.signal, transferList: [port2] },
      );
    } catch (error) {
      const reason: unknown = controller.signal.reason;
      if (reason === ranPastDeadline) {
        // The ended thread's replacement starts under this account's slot: the restart is its cost.
        await restarted();
        return { ok: false, error: 'it ran past its time budget' };
      }
      if (reason === queueTimedOut) return busy(refusals.aborted);
      throw error;
    } finally {
      clearTimeout(timer);
      port1.close();
      release();
    }
  };

  return {
    async run(source, input, accountId) {
      // Whatever escapes the sandbox or the reading of its output (text that is not JSON, nesting
      // too deep to parse or check) is the transformation's failure, never the caller's.
      try {
        const raw = await execute(accountId, source, JSON.stringify(input));
        if ('kind' in raw) return raw;
        if (!raw.ok) return { kind: 'failed', error: `the transformation failed: ${raw.error}` };
        const value: unknown = raw.json === undefined ? undefined : JSON.parse(raw.json);
        return checkTransformationOutput(value, input.url, policy);
      } catch (error) {
        return { kind: 'failed', error: `the transformation failed: ${escapedMessage(error)}` };
      }
    },
    async check(source, accountId) {
      if (Buffer.byteLength(source) > maxTransformationBytes)
        return { kind: 'refused', error: `longer than ${maxTransformationBytes} bytes` };
      try {
        const raw = await execute(accountId, source, null);
        if ('kind' in raw) return raw;
        return raw.ok ? { kind: 'valid' } : { kind: 'refused', error: raw.error };
      } catch (error) {
        return { kind: 'refused', error: escapedMessage(error) };
      }
    },
    close: async () => {
      await pool?.destroy();
    },
  };
}
