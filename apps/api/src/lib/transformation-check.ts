/**
 * The API's side of transformations: a subscription's `transformation` is refused (400 naming
 * `/transformation`) when the deployment turned them off, or when it does not define a
 * `handler` function (its syntax error, say), checked in the same sandbox, under the same limits,
 * the worker runs it in. No thread free in time is the service's capacity: 503 with `Retry-After`.
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
 * Checks a `transformation` sent on create or update (`undefined`: not sent; null: removed).
 *
 * @param runner the API's sandbox; null when TRANSFORMATIONS=false
 * @param accountId whose run it is (each account's runs wait behind its own)
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
