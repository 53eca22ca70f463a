/**
 * What a subscription may carry for its callback's gateway and TLS, as the API stores it: custom
 * headers (`custom-headers.ts` in @webhooks/shared) and a client certificate
 * (`client-certificate.ts`), each checked (400 naming each refused field), then stored as one JSON
 * object sealed by the {@link SecretBox} and bound to the subscription's id (they hold a gateway's
 * API key, a private key). Headers are shown with their values masked except by
 * `GET .../headers`; a certificate only as its summary.
 */
import {
  checkClientCertificate,
  checkCustomHeaders,
  type ClientCertificate,
  type SecretBox,
} from '@webhooks/shared';
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

/**
 * The stored form of `given` for subscription `id`: null for none.
 *
 * @throws HttpProblem 400 naming the field when the certificate or key does not parse, the key is
 *   not the certificate's, or the certificate is not valid now
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
