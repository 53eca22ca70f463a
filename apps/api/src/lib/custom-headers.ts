/**
 * A subscription's custom headers as the API stores and shows them: checked against the rules of
 * `custom-headers.ts` in @webhooks/shared (400 naming each refused header), stored as one JSON
 * object sealed by the {@link SecretBox} and bound to the subscription's id (they may hold a
 * gateway's API key), and shown with their values masked except by `GET .../headers`.
 */
import { checkCustomHeaders, type SecretBox } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/**
 * The stored form of `headers` for subscription `id`: null for none (null or an empty object).
 *
 * @throws HttpProblem 400 naming each refused header (`/headers/<name>`)
 */
export function sealedCustomHeaders(
  headers: Record<string, string> | null,
  id: string,
  secretBox: SecretBox,
): string | null {
  if (headers === null || Object.keys(headers).length === 0) return null;
  const checked = checkCustomHeaders(headers);
  if ('problems' in checked) {
    throw new HttpProblem(
      400,
      'validation',
      `headers: ${checked.problems.map((problem) => problem.detail).join('; ')}`,
      checked.problems,
    );
  }
  return secretBox.seal(JSON.stringify(checked.headers), id);
}
