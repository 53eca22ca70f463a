/** Waiting for something expected to happen soon, by polling (tests, the demo, the benchmarks). */

/** Sleeps `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `intervalMs` ms until it returns a value other than undefined/false, and
 * returns it.
 *
 * @throws Error naming `what` when `timeoutMs` (ms) passes first; the default is generous because
 *   two test files share a 2-core CI machine with their services, and it bounds a hang only
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
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

/**
 * Polls `count` every `intervalMs` ms until it reaches `target`, for as long as it keeps growing:
 * gives up once it has not grown for `stallMs` ms, so that a backlog drains at whatever pace the
 * machine allows and only a count that stopped moving (something lost) ends the wait early.
 *
 * @returns the last count (below `target` when it stalled)
 */
export async function waitWhileGrowing(
  count: () => number | Promise<number>,
  target: number,
  stallMs: number,
  intervalMs = 250,
): Promise<number> {
  let last = await count();
  let grewAt = Date.now();
  while (last < target) {
    await sleep(intervalMs);
    const now = await count();
    if (now > last) grewAt = Date.now();
    else if (Date.now() - grewAt > stallMs) return now;
    last = now;
  }
  return last;
}
