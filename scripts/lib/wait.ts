/** Waiting for something expected to happen soon, by polling (tests, the demo, the benchmarks). */

/** Sleeps `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `intervalMs` ms until it returns a value other than undefined/false, and
 * returns it.
 *
 * @throws Error naming `what` when `timeoutMs` (ms) passes first
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
