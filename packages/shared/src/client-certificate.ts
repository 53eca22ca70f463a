/**
 * Client certificates (mutual TLS) per subscription: a certificate and its private key in PEM,
 * which the worker presents when the callback's server asks for one (RFC 8446 §4.3.2), so that a
 * receiver can prove the sender by TLS alone. Checked when set (each parses, the key is the
 * certificate's, the certificate is valid now), stored as one JSON object sealed like the signing
 * secrets, and shown only as a summary (subject, issuer, expiry, fingerprint), never the key.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { SecretBox } from './secret-box.js';

/** Longest certificate or key accepted, in characters of PEM (a chain of a few certificates fits). */
export const maxClientCertificatePem = 16_384;

/** A certificate and its private key, in PEM. */
export interface ClientCertificate {
  certificate: string;
  key: string;
}

/** What a subscription shows of its client certificate. */
export interface ClientCertificateSummary {
  subject: string;
  issuer: string;
  /** When it expires, ISO 8601. */
  valid_to: string;
  /** SHA-256 fingerprint, colon-separated hex (as `openssl x509 -fingerprint -sha256` prints it). */
  fingerprint_sha256: string;
}

/** The summary of a PEM certificate. @throws TypeError when it does not parse */
export function summarizeCertificate(certificate: string): ClientCertificateSummary {
  const parsed = new X509Certificate(certificate);
  return {
    subject: parsed.subject,
    issuer: parsed.issuer,
    valid_to: new Date(parsed.validTo).toISOString(),
    fingerprint_sha256: parsed.fingerprint256,
  };
}

/**
 * Checks a client certificate as a client sent it, at `now`.
 *
 * @returns its summary, or the problems found, each naming its field (`/client_certificate/...`)
 */
export function checkClientCertificate(
  given: ClientCertificate,
  now: Date,
): { summary: ClientCertificateSummary } | { problems: Array<{ pointer: string; detail: string }> } {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(given.certificate);
  } catch {
    return { problems: [{ pointer: '/client_certificate/certificate', detail: 'is not a PEM certificate' }] };
  }
  let key;
  try {
    key = createPrivateKey(given.key);
  } catch {
    return {
      problems: [{ pointer: '/client_certificate/key', detail: 'is not an unencrypted PEM private key' }],
    };
  }
  if (!certificate.checkPrivateKey(key))
    return {
      problems: [{ pointer: '/client_certificate/key', detail: "is not the certificate's private key" }],
    };
  if (new Date(certificate.validTo) <= now || new Date(certificate.validFrom) > now)
    return {
      problems: [
        {
          pointer: '/client_certificate/certificate',
          detail: `is not valid now (valid from ${certificate.validFrom} to ${certificate.validTo})`,
        },
      ],
    };
  return { summary: summarizeCertificate(given.certificate) };
}

/**
 * The client certificate stored for subscription `subscriptionId` (sealed and bound to that id),
 * or null for none.
 *
 * @throws SecretDecryptionError when no configured key opens it
 */
export function openClientCertificate(
  stored: string | null,
  subscriptionId: string,
  secretBox: Pick<SecretBox, 'open'>,
): ClientCertificate | null {
  return stored === null ? null : (JSON.parse(secretBox.open(stored, subscriptionId)) as ClientCertificate);
}
