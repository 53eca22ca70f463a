/** WORKER_MAX_HEAP_MB, the V8 heap bound, in a module importing only TypeBox, so the launcher loads nothing else. */
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

/** The heap bound in MiB from `env`; an invalid value gives the default here, and the service thread refuses it. */
export function heapLimitMb(env: Record<string, string | undefined>): number {
  const raw = env.WORKER_MAX_HEAP_MB?.trim();
  const value = Number(raw);
  return raw && Value.Check(heapLimitEnv.WORKER_MAX_HEAP_MB, value) ? value : fallback;
}

/**
 * The young generation in MiB (`resourceLimits.maxYoungGenerationSizeMb`): large enough that a
 * delivery's short-lived objects die in a scavenge at saturation instead of being promoted.
 */
export const youngGenerationMb = 48;
