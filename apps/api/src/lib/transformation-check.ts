/**
 * The API's side of transformations: a subscription's `transformation` is refused (400 naming
 * `/transformation`) when the deployment turned them off, or when it does not define a
 * `handler` function (its syntax error, say), checked in the same sandbox the worker runs it in.
 */
import type { TransformationRunner } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** The 400 naming `/transformation`. */
export function transformationProblem(detail: string): HttpProblem {
  return new HttpProblem(400, 'validation', `transformation ${detail}`, [
    { pointer: '/transformation', detail },
  ]);
}

/**
 * Checks a `transformation` sent on create or update (`undefined`: not sent; null: removed).
 *
 * @param runner the API's sandbox; null when TRANSFORMATIONS=false
 * @throws HttpProblem 400 naming `/transformation`
 */
export async function checkTransformation(
  runner: TransformationRunner | null,
  source: string | null | undefined,
): Promise<void> {
  if (source === undefined || source === null) return;
  if (runner === null)
    throw transformationProblem('cannot be set: transformations are turned off in this deployment');
  const problem = await runner.check(source);
  if (problem !== null) throw transformationProblem(`cannot be used: ${problem}`);
}
