/**
 * Signing secrets at rest: AES-256-GCM under SECRETS_ENCRYPTION_KEY (the newest encrypts, any
 * decrypts), as `enc:v2:<key id>:<iv>:<ciphertext+tag>`, bound to the subscription id as additional
 * data (NIST SP 800-38D §7). `enc:v1:` (unbound) and plaintext open outside production only;
 * `pnpm db:migrate` reseals them.
 */
import { splitList } from '@webhooks/publisher';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { ConfigError } from './config.js';

const prefix = 'enc:v2:';
const unboundPrefix = 'enc:v1:';
const keyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;

/** A stored secret could not be decrypted: its key is not configured, or the value was altered. */
export class SecretDecryptionError extends Error {
  override name = 'SecretDecryptionError';
}

/** Encrypts and decrypts signing secrets for storage. */
export interface SecretBox {
  /** True when a key is configured; without one, secrets are stored as they are. */
  readonly encrypting: boolean;
  /** The stored form of `plaintext` for `subscriptionId`: sealed under the newest key, or as is without keys. */
  seal(plaintext: string, subscriptionId: string): string;
  /**
   * The plaintext of a value stored for `subscriptionId` (plaintext as is, unless refused).
   * @throws SecretDecryptionError when no key has its key id, its tag fails (altered, or another
   *   subscription's), or it is plaintext in a box that refuses it
   */
  open(stored: string, subscriptionId: string): string;
  /** Whether `seal(open(stored))` would change it: plaintext, unbound v1, or an older key. */
  needsResealing(stored: string): boolean;
}

export interface SecretBoxOptions {
  /** Refuse plaintext in `open` (production with a key: it was written around the service). Off for migrations. */
  refusePlaintext?: boolean;
}

/** Whether `stored` is a sealed value (of any version), not a plaintext secret. */
export function isSealedSecret(stored: string): boolean {
  return stored.startsWith('enc:');
}

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);

/**
 * SECRETS_ENCRYPTION_KEY: comma-separated base64(url) keys of 32 bytes, newest first; empty: none.
 * @throws ConfigError naming SECRETS_ENCRYPTION_KEY when a key is not 32 bytes of base64
 */
export function parseEncryptionKeys(value: string): Buffer[] {
  return splitList(value).map((part, index) => {
    const key = Buffer.from(part, 'base64');
    if (key.length !== keyBytes || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(part)) {
      throw new ConfigError(
        `Invalid environment variable SECRETS_ENCRYPTION_KEY: key ${index + 1} must be ${keyBytes} bytes in base64 (openssl rand -base64 32)`,
      );
    }
    return key;
  });
}

/** A {@link SecretBox} over `keys`, newest first (see {@link parseEncryptionKeys}). */
export function createSecretBox(keys: readonly Buffer[], options: SecretBoxOptions = {}): SecretBox {
  const byId = new Map(keys.map((key) => [keyId(key), key]));
  const newest = keys[0];
  const newestId = newest === undefined ? undefined : keyId(newest);
  return {
    encrypting: newest !== undefined,
    seal(plaintext, subscriptionId) {
      if (newest === undefined) return plaintext;
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', newest, iv, { authTagLength: tagBytes });
      cipher.setAAD(Buffer.from(subscriptionId, 'utf8'));
      const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${prefix}${newestId}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
    },
    open(stored, subscriptionId) {
      const bound = stored.startsWith(prefix);
      if (!bound && !stored.startsWith(unboundPrefix)) {
        if (options.refusePlaintext) {
          throw new SecretDecryptionError(
            `Subscription ${subscriptionId} has a plaintext signing secret, refused while SECRETS_ENCRYPTION_KEY is set in production; run pnpm db:migrate to seal it`,
          );
        }
        return stored;
      }
      // Unbound, it would open in any row it was copied into: production refuses it as plaintext.
      if (!bound && options.refusePlaintext) {
        throw new SecretDecryptionError(
          `Subscription ${subscriptionId} has a signing secret sealed without its binding (enc:v1), refused in production; run pnpm db:migrate to reseal it`,
        );
      }
      const [id = '', iv = '', sealed = ''] = stored.slice(prefix.length).split(':');
      const key = byId.get(id);
      if (key === undefined) {
        throw new SecretDecryptionError(`No configured SECRETS_ENCRYPTION_KEY has key id ${id}`);
      }
      const bytes = Buffer.from(sealed, 'base64url');
      try {
        if (bytes.length < tagBytes) throw new Error('shorter than its tag');
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), {
          authTagLength: tagBytes,
        });
        if (bound) decipher.setAAD(Buffer.from(subscriptionId, 'utf8'));
        decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
        return Buffer.concat([
          decipher.update(bytes.subarray(0, bytes.length - tagBytes)),
          decipher.final(),
        ]).toString('utf8');
      } catch (error) {
        throw new SecretDecryptionError(
          `The stored secret of ${subscriptionId} failed authentication under key ${id}`,
          {
            cause: error,
          },
        );
      }
    },
    needsResealing(stored) {
      if (newestId === undefined) return false;
      return !stored.startsWith(`${prefix}${newestId}:`);
    },
  };
}
