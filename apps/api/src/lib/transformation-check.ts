/**
 * The API's side of transformations: `transformation` is refused (400) when turned off or without a
 * `handler` function, checked in the worker's sandbox and limits; no thread in time is 503.
 */
import type { TransformationBusy, TransformationRunner } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** The 400 naming `/transformation`. */
export function transformationProblem(detail: string): HttpProblem {
  return new HttpProblem(400, 'validation', `transformation ${detail}`, [
    { pointer: '/transformation', detail },
  ]);
}

/** The 503 of a sandbox with no thread free in time, `Retry-After` in whole seconds. */
export function transformationBusyProblem(busy: TransformationBusy): HttpProblem {
  return new HttpProblem(
    503,
    'transformations-busy',
    `The transformation could not run: ${busy.reason}; try again shortly`,
    undefined,
    { 'retry-after': String(Math.max(1, Math.ceil(busy.retryAfterMs / 1000))) },
  );
}

/**
 * Checks a `transformation` sent (undefined: not sent; null: removed) with `runner` (null: off) for `accountId`.
 * @throws HttpProblem 400 naming `/transformation`; 503 `transformations-busy` with `Retry-After`
 */
export async function checkTransformation(
  runner: TransformationRunner | null,
  source: string | null | undefined,
  accountId: string,
): Promise<void> {
  if (source === undefined || source === null) return;
  if (runner === null)
    throw transformationProblem('cannot be set: transformations are turned off in this deployment');
  const checked = await runner.check(source, accountId);
  if (checked.kind === 'busy') throw transformationBusyProblem(checked);
  if (checked.kind === 'refused') throw transformationProblem(`cannot be used: ${checked.error}`);
}
