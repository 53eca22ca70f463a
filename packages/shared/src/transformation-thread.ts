/**
 * The body of a transformation thread (piscina runs it, `transformation.ts` starts the pool): runs
 * one subscription's function on one webhook in QuickJS compiled to WebAssembly, a fresh runtime
 * per run, with no access to the process, the network or the file system (QuickJS has none, and
 * no host function is exposed to it). Its CPU time is bounded by an interrupt at the deadline,
 * its heap and stack by QuickJS's limits.
 */
import {
  newQuickJSWASMModuleFromVariant,
  shouldInterruptAfterDeadline,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';

/**
 * One run: the function's source, its input as JSON (null: only define the function and say
 * whether `handler` is one), and its limits (ms, bytes).
 */
export interface TransformationTask {
  source: string;
  inputJson: string | null;
  timeoutMs: number;
  memoryBytes: number;
}

/** What the run gave: the returned value (through JSON), or the error it threw or ran into. */
export type TransformationRaw = { ok: true; value: unknown } | { ok: false; error: string };

let module: Promise<QuickJSWASMModule> | undefined;

/**
 * The script QuickJS runs: the function's source, then a call of its `handler` on the input,
 * whose value is the script's (without input, only the check that `handler` is a function).
 */
export function transformationScript(source: string, inputJson: string | null): string {
  return `${source}
;(function () {
  if (typeof handler !== 'function') throw new TypeError('the transformation defines no function handler(webhook)');
  return ${inputJson === null ? 'null' : `handler(JSON.parse(${JSON.stringify(inputJson)}))`};
})()`;
}

/** Runs `task`; never throws. */
export default async function run(task: TransformationTask): Promise<TransformationRaw> {
  module ??= newQuickJSWASMModuleFromVariant(import('@jitl/quickjs-wasmfile-release-sync'));
  const quickjs = await module;
  try {
    const value = quickjs.evalCode(transformationScript(task.source, task.inputJson), {
      shouldInterrupt: shouldInterruptAfterDeadline(Date.now() + task.timeoutMs),
      memoryLimitBytes: task.memoryBytes,
      maxStackSizeBytes: 256 * 1024,
    });
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: describe(error) };
  }
}

/** A sentence for what the function threw or ran into (interrupted: past its time). */
function describe(error: unknown): string {
  if (error !== null && typeof error === 'object') {
    const { name, message } = error as { name?: unknown; message?: unknown };
    if (name === 'InternalError' && message === 'interrupted') return 'it ran past its time budget';
    if (typeof message === 'string')
      return `${typeof name === 'string' ? name : 'Error'}: ${message}`.slice(0, 500);
  }
  return `it threw ${JSON.stringify(error) ?? String(error)}`.slice(0, 500);
}
