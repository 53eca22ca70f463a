/**
 * Signing secrets and delivery signatures in the Standard Webhooks format
 * (https://www.standardwebhooks.com, "Signature scheme"): the `webhook-signature` header holds one
 * signature of `"<webhook-id>.<webhook-timestamp>.<body>"` per live secret, space-separated:
 * - `v1,<base64 HMAC-SHA256>`, keyed with the base64-decoded part of a shared secret after
 *   `whsec_` (the `standardwebhooks` package's HMAC, the same code clients verify with);
 * - `v1a,<base64 Ed25519 signature>` (RFC 8032), with a private key the service keeps (`whsk_` +
 *   base64 of its 32-byte seed, never shown) whose public key the client verifies with (`whpk_` +
 *   base64 of its 32 bytes): the asymmetric scheme, no shared secret to leak from a receiver.
 */
import { createPrivateKey, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** How long a rotated-out secret keeps signing beside the new one, in milliseconds (24 hours). */
export const secretRotationOverlapMs = 24 * 60 * 60 * 1000;

/** A subscription's signature scheme: `v1` (HMAC, shared secret) or `v1a` (Ed25519). */
export type SignatureScheme = 'v1' | 'v1a';

/** A new signing secret of `scheme`: `whsec_` + base64 of 32 random bytes, or an Ed25519 `whsk_` key. */
export function generateSigningSecret(scheme: SignatureScheme = 'v1'): string {
  return scheme === 'v1'
    ? `whsec_${randomBytes(32).toString('base64')}`
    : `whsk_${randomBytes(32).toString('base64')}`;
}

/** The scheme a stored secret signs with. */
export function schemeOfSecret(secret: string): SignatureScheme {
  return secret.startsWith('whsk_') ? 'v1a' : 'v1';
}

/** The PKCS #8 DER prefix of an Ed25519 private key, before its 32-byte seed (RFC 8410 §7). */
const ed25519Pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

/** Private keys of the `whsk_` secrets signed with lately: importing one costs more than a signature. */
const privateKeys = new Map<string, KeyObject>();

function privateKeyOf(secret: string): KeyObject {
  let key = privateKeys.get(secret);
  if (key === undefined) {
    const seed = Buffer.from(secret.slice('whsk_'.length), 'base64');
    key = createPrivateKey({ key: Buffer.concat([ed25519Pkcs8Prefix, seed]), format: 'der', type: 'pkcs8' });
    if (privateKeys.size >= 10_000) privateKeys.clear();
    privateKeys.set(secret, key);
  }
  return key;
}

/**
 * What the client verifies with: the secret itself for `v1`; for a `whsk_` key, its public key
 * (`whpk_` + base64 of the 32-byte Ed25519 public key).
 */
export function verificationKey(secret: string): string {
  if (schemeOfSecret(secret) === 'v1') return secret;
  const jwk = createPublicKey(privateKeyOf(secret)).export({ format: 'jwk' });
  return `whpk_${Buffer.from(jwk.x!, 'base64url').toString('base64')}`;
}

/**
 * The `webhook-signature` header value for one attempt: one signature per secret, space-separated
 * (a rotation sends both), `v1,` or `v1a,` as each secret's scheme says.
 *
 * @param secrets signing secrets, `whsec_` or `whsk_` + base64 each
 * @param webhookId the `webhook-id` header (the event id)
 * @param timestamp the `webhook-timestamp` of this attempt
 * @param body the exact request body
 */
export function signatureHeader(
  secrets: readonly string[],
  webhookId: string,
  timestamp: Date,
  body: string,
): string {
  return secrets
    .map((secret) => {
      if (schemeOfSecret(secret) === 'v1') return new Webhook(secret).sign(webhookId, timestamp, body);
      const content = `${webhookId}.${Math.floor(timestamp.getTime() / 1000)}.${body}`;
      return `v1a,${sign(null, Buffer.from(content), privateKeyOf(secret)).toString('base64')}`;
    })
    .join(' ');
}
