/**
 * Client certificates (mutual TLS) per subscription: a PEM certificate and key the worker presents
 * when the callback asks (RFC 8446 §4.3.2). Checked when set (parses, key matches and is allowed,
 * chain bounded, valid now), sealed like signing secrets, and shown only as a summary, never the key.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { SecretBox } from './secret-box.js';

/** Longest certificate or key accepted, in characters of PEM (a chain of a few certificates fits). */
export const maxClientCertificatePem = 16_384;

/** Most certificates in `certificate` (the client's own, then its intermediates). */
export const maxChainCertificates = 4;

/** The EC curves a client key may use: P-256 and P-384 (OpenSSL's names). */
const allowedCurves = new Set(['prime256v1', 'secp384r1']);

/**
 * Why a client key is refused, or null: RSA 2048–4096, EC P-256/P-384 or Ed25519 only, since the
 * worker signs with it in every handshake, and a hostile callback could spend its CPU with a larger one.
 */
export function keyRefusal(
  key: Pick<KeyObject, 'asymmetricKeyType' | 'asymmetricKeyDetails'>,
): string | null {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    return bits >= 2048 && bits <= 4096 ? null : `is an RSA key of ${bits} bits: use 2048 to 4096`;
  }
  if (key.asymmetricKeyType === 'ec')
    return allowedCurves.has(details.namedCurve ?? '')
      ? null
      : `is an EC key on ${details.namedCurve ?? 'an unknown curve'}: use P-256 or P-384`;
  if (key.asymmetricKeyType === 'ed25519') return null;
  return `is a ${key.asymmetricKeyType ?? 'unknown'} key: use RSA (2048 to 4096 bits), EC (P-256, P-384) or Ed25519`;
}

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

/** Checks a client certificate as sent, at `now`. @returns its summary, or problems (`/client_certificate/…`) */
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
  const refused = keyRefusal(key);
  if (refused !== null) return { problems: [{ pointer: '/client_certificate/key', detail: refused }] };
  const chain = given.certificate.match(/-----BEGIN CERTIFICATE-----/g)?.length ?? 0;
  if (chain > maxChainCertificates)
    return {
      problems: [
        {
          pointer: '/client_certificate/certificate',
          detail: `holds ${chain} certificates: at most ${maxChainCertificates} (the certificate and its intermediates)`,
        },
      ],
    };
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
 * The client certificate stored for `subscriptionId` (sealed and bound to it), or null.
 * @throws SecretDecryptionError when no configured key opens it
 */
export function openClientCertificate(
  stored: string | null,
  subscriptionId: string,
  secretBox: Pick<SecretBox, 'open'>,
): ClientCertificate | null {
  return stored === null ? null : (JSON.parse(secretBox.open(stored, subscriptionId)) as ClientCertificate);
}
