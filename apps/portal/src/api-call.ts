/**
 * Calling the API from a page: what a call gave (its data, or a sentence saying what went wrong
 * and the problem details naming the fields), and a hook that loads data and reloads it on demand.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Problem } from '@webhooks/client';
import { describeFailure } from './failure.js';

/** What openapi-fetch resolves to, reduced to what pages read. */
interface ClientAnswer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * A call's result: its data, or why it failed, with the HTTP status (0 when the API was not
 * reached) and the `Retry-After` of a 429 or 503, in seconds, when it named one.
 */
export type Outcome<T> =
  | { ok: true; data: T }
  | { ok: false; failure: string; status: number; problem?: Problem | undefined; retryAfterSeconds?: number };

/** Awaits `call` and says what it gave; a network failure (no answer) is the API unavailable. */
export async function outcome<T>(call: Promise<ClientAnswer<T>>): Promise<Outcome<T>> {
  try {
    const { data, error, response } = await call;
    if (response.ok) return { ok: true, data: data as T };
    const problem = error as Problem | undefined;
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
    return {
      ok: false,
      failure: describeFailure(response.status, problem),
      status: response.status,
      problem,
      ...(Number.isInteger(retryAfter) && retryAfter >= 0 ? { retryAfterSeconds: retryAfter } : {}),
    };
  } catch {
    return { ok: false, failure: describeFailure(0, undefined), status: 0 };
  }
}

/** The detail of `problem` for the field at JSON pointer `pointer` (e.g. `/callback_url`). */
export function fieldError(problem: Problem | undefined, pointer: string): string | undefined {
  return problem?.errors?.find((error) => error.pointer === pointer)?.detail;
}

/** Data being loaded, loaded, or not loadable. */
export type Loaded<T> =
  { state: 'loading' } | { state: 'ready'; data: T } | { state: 'failed'; failure: string };

/**
 * Loads with `load` whenever `deps` change, and again on `reload()`; a reload keeps showing the
 * data it replaces until the new data arrives, so refreshing never flickers.
 */
export function useLoaded<T>(
  load: () => Promise<ClientAnswer<T>>,
  deps: unknown[],
): [Loaded<T>, () => Promise<void>] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const run = useCallback(async () => {
    const result = await outcome(load());
    setLoaded(
      result.ok ? { state: 'ready', data: result.data } : { state: 'failed', failure: result.failure },
    );
  }, deps);
  useEffect(() => {
    setLoaded({ state: 'loading' });
    void run();
  }, [run]);
  return [loaded, run];
}

/** Calls `reload` every `everyMs` while `active` is true (e.g. while a delivery is pending). */
export function useRefreshWhile(active: boolean, reload: () => Promise<void>, everyMs: number): void {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => void reload(), everyMs);
    return () => clearInterval(timer);
  }, [active, reload, everyMs]);
}
