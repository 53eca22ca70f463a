/**
 * A transformation thread's body (piscina runs it): one function on one webhook in QuickJS compiled
 * to WebAssembly, a fresh runtime per run, no host function exposed. Bounded inside by the
 * interrupt, QuickJS's heap limit and the WebAssembly memory's maximum; outside, the pool's
 * deadline ends the thread (built-ins the interrupt does not reach).
 */
import type { MessagePort } from 'node:worker_threads';
import { workerData } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  shouldInterruptAfterDeadline,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import releaseSyncExport from '@jitl/quickjs-wasmfile-release-sync';

// The package's types describe its CommonJS build; in its ES module build, the default is the variant.
const releaseSync = releaseSyncExport as unknown as QuickJSSyncVariant;

/** What the pool gives each thread (piscina's `workerData`). */
export interface TransformationThreadData {
  /** QuickJS's heap limit of one run, in bytes. */
  memoryBytes: number;
}

/**
 * One run: source, input as JSON (null: only check `handler` is a function), time (ms) and longest
 * result (bytes of JSON). `started` hears one message when the run begins (the host's deadline).
 */
export interface TransformationTask {
  source: string;
  inputJson: string | null;
  timeoutMs: number;
  maxOutputBytes: number;
  started: MessagePort;
}

/** What the run gave: the value as JSON (undefined: not serialisable), or the error. */
export type TransformationRaw = { ok: true; json: string | undefined } | { ok: false; error: string };

/** The emscripten build's own memory (static data and stack) before any heap: 256 pages. */
const basePages = 256;
/** Room above QuickJS's limit for the allocator's bookkeeping, in 64 KiB pages (4 MiB). */
const slackPages = 64;
const pageBytes = 64 * 1024;

const require = createRequire(import.meta.url);
/** Compiled once per thread; each instance gets its own memory. */
const compiled = readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')).then((bytes) =>
  WebAssembly.compile(bytes),
);

/** A QuickJS instance whose memory cannot grow past the heap limit plus its own base. */
function newModule(memoryBytes: number): Promise<QuickJSWASMModule> {
  const maximum = basePages + Math.ceil(memoryBytes / pageBytes) + slackPages;
  return newQuickJSWASMModuleFromVariant(
    newVariant(releaseSync, {
      wasmModule: () => compiled,
      wasmMemory: new WebAssembly.Memory({ initial: basePages, maximum }),
    }),
  );
}

const { memoryBytes } = workerData as TransformationThreadData;
/** The thread's QuickJS, loaded before its first run and made anew after a run that trapped inside it. */
let module: Promise<QuickJSWASMModule> | undefined = newModule(memoryBytes);
await module;

/** The script QuickJS runs: the source, then `handler(input)` serialised to JSON inside the sandbox. */
export function transformationScript(source: string, inputJson: string | null): string {
  return `${source}
;(function () {
  if (typeof handler !== 'function') throw new TypeError('the transformation defines no function handler(webhook)');
  return ${inputJson === null ? 'null' : `JSON.stringify(handler(JSON.parse(${JSON.stringify(inputJson)})))`};
})()`;
}

/** Runs `task`; never throws. */
export default async function run(task: TransformationTask): Promise<TransformationRaw> {
  module ??= newModule(memoryBytes);
  const quickjs = await module;
  task.started.postMessage(null);
  task.started.close();
  const runtime = quickjs.newRuntime();
  try {
    runtime.setMemoryLimit(memoryBytes);
    runtime.setMaxStackSize(256 * 1024);
    runtime.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + task.timeoutMs));
    const context = runtime.newContext();
    try {
      const result = context.evalCode(transformationScript(task.source, task.inputJson));
      if (result.error !== undefined) {
        const error = describe(context, result.error);
        result.error.dispose();
        return { ok: false, error };
      }
      const handle = result.value;
      try {
        if (context.typeof(handle) !== 'string') return { ok: true, json: undefined };
        const json = boundedString(context, handle, task.maxOutputBytes);
        return json === null ? { ok: false, error: tooLarge(task.maxOutputBytes) } : { ok: true, json };
      } finally {
        handle.dispose();
      }
    } finally {
      context.dispose();
    }
  } catch (error) {
    // A trap in the module (its memory's maximum reached outside QuickJS's checks): a new one next.
    module = undefined;
    return { ok: false, error: `it broke the sandbox: ${String(error)}`.slice(0, maxErrorBytes) };
  } finally {
    if (runtime.alive) disposeQuietly(runtime);
  }
}

/** Frees a runtime whose run was cut short; a module left unusable is replaced. */
function disposeQuietly(runtime: { dispose(): void }): void {
  try {
    runtime.dispose();
  } catch {
    module = undefined;
  }
}

function tooLarge(maxOutputBytes: number): string {
  return `the returned webhook is larger than ${maxOutputBytes} bytes (TRANSFORMATION_MAX_BODY_BYTES)`;
}

/** The string `handle` holds, copied out only when it fits `maxBytes` of UTF-8, else null. */
function boundedString(context: QuickJSContext, handle: QuickJSHandle, maxBytes: number): string | null {
  const lengthHandle = context.getProp(handle, 'length');
  const length = context.getNumber(lengthHandle);
  lengthHandle.dispose();
  if (length > maxBytes) return null;
  const text = context.getString(handle);
  return Buffer.byteLength(text) > maxBytes ? null : text;
}

/** Longest error text read out of the sandbox, in bytes. */
const maxErrorBytes = 500;

/** A sentence for what the function threw (read from `name` and `message`, running none of its code). */
function describe(context: QuickJSContext, error: QuickJSHandle): string {
  const text = (handle: QuickJSHandle): string | undefined =>
    context.typeof(handle) === 'string'
      ? (boundedString(context, handle, 64 * 1024) ?? undefined)
      : undefined;
  if (context.typeof(error) === 'object') {
    const nameHandle = context.getProp(error, 'name');
    const messageHandle = context.getProp(error, 'message');
    const name = text(nameHandle);
    const message = text(messageHandle);
    nameHandle.dispose();
    messageHandle.dispose();
    if (name === 'InternalError' && message === 'interrupted') return 'it ran past its time budget';
    if (name === 'InternalError' && message === 'out of memory')
      return 'it ran out of memory (TRANSFORMATION_MEMORY_MB)';
    if (message !== undefined) return `${name ?? 'Error'}: ${message}`.slice(0, maxErrorBytes);
    return 'it threw an object that is not an Error';
  }
  const thrown = text(error);
  if (thrown !== undefined) return `it threw ${JSON.stringify(thrown)}`.slice(0, maxErrorBytes);
  return `it threw ${String(context.dump(error))}`.slice(0, maxErrorBytes);
}
