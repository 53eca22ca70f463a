/**
 * A subscription's custom headers and client certificate as the API stores them: checked (400
 * naming each field), then sealed by the {@link SecretBox} bound to the subscription id. Shown masked
 * (headers, except by `GET .../headers`) or as a summary (certificate).
 */
import {
  checkClientCertificate,
  checkCustomHeaders,
  type ClientCertificate,
  type SecretBox,
} from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** The stored form of `headers` for `id` (null: none). @throws HttpProblem 400 naming each refused header */
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

/**
 * The stored form of `given` for `id` (null: none).
 * @throws HttpProblem 400 naming the field: unparsable, a key not the certificate's, or not valid now
 */
export function sealedClientCertificate(
  given: ClientCertificate | null,
  id: string,
  secretBox: SecretBox,
): string | null {
  if (given === null) return null;
  const checked = checkClientCertificate(given, new Date());
  if ('problems' in checked) {
    throw new HttpProblem(
      400,
      'validation',
      `client_certificate: ${checked.problems.map((problem) => `${problem.pointer.split('/').pop()} ${problem.detail}`).join('; ')}`,
      checked.problems,
    );
  }
  return secretBox.seal(JSON.stringify({ certificate: given.certificate, key: given.key }), id);
}
