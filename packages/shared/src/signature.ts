/**
 * Signatures in the Standard Webhooks format (standardwebhooks.com, "Signature scheme"):
 * `webhook-signature` holds one signature of `"<webhook-id>.<webhook-timestamp>.<body>"` per live secret:
 * - `v1,<base64 HMAC-SHA256>` keyed with a `whsec_` secret (the `standardwebhooks` package's HMAC);
 * - `v1a,<base64 Ed25519>` (RFC 8032) with a `whsk_` key the service keeps; clients verify with its
 *   `whpk_` public key, so no shared secret can leak from a receiver.
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

/** What the client verifies with: the `v1` secret itself, or a `whsk_` key's `whpk_` public key. */
export function verificationKey(secret: string): string {
  if (schemeOfSecret(secret) === 'v1') return secret;
  const jwk = createPublicKey(privateKeyOf(secret)).export({ format: 'jwk' });
  return `whpk_${Buffer.from(jwk.x!, 'base64url').toString('base64')}`;
}

/**
 * The `webhook-signature` value of one attempt: one signature per secret (a rotation sends both).
 * @param secrets `whsec_` or `whsk_` secrets
 * @param webhookId the `webhook-id` (the event id)
 * @param timestamp this attempt's `webhook-timestamp`
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
