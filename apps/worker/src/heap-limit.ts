/**
 * WORKER_MAX_HEAP_MB, the bound of the worker's V8 heap (the same bounded heap however
 * the worker is started). Its own module, importing only TypeBox, so that the launcher
 * (`main.ts`) reads it without loading the service's dependencies into its own thread.
 */
import Type from 'typebox';
import Value from 'typebox/value';

const fallback = 160;

/** The setting, spread into the worker's environment schema (docs/configuration.md). */
export const heapLimitEnv = {
  WORKER_MAX_HEAP_MB: Type.Integer({
    default: fallback,
    minimum: 32,
    maximum: 16_384,
    description:
      "Most MiB of the worker's V8 old generation, however it is started; past it the worker exits with an error (a restart, not swap)",
  }),
};

/**
 * The heap bound in MiB from `env`. An invalid value gives the default here: the service thread
 * then refuses it when it loads its configuration, naming the variable, and the process exits.
 */
export function heapLimitMb(env: Record<string, string | undefined>): number {
  const raw = env.WORKER_MAX_HEAP_MB?.trim();
  const value = Number(raw);
  return raw && Value.Check(heapLimitEnv.WORKER_MAX_HEAP_MB, value) ? value : fallback;
}

/**
 * The young generation of the worker's V8 heap, in MiB (`resourceLimits.maxYoungGenerationSizeMb`,
 * https://nodejs.org/api/worker_threads.html#new-workerfilename-options): large enough that a
 * delivery's short-lived objects (got's per-request options and streams, ioredis' commands) die in
 * a scavenge at saturation instead of being promoted to the old generation.
 */
export const youngGenerationMb = 48;
