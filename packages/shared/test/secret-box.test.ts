import { createCipheriv, createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ConfigError, createSecretBox, parseEncryptionKeys, SecretDecryptionError } from '../src/index.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);
const secret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const owner = '01900000-0000-7000-8000-000000000001';
const other = '01900000-0000-7000-8000-000000000002';

describe('createSecretBox', () => {
  it('seals under the newest key, never the same way twice, and opens again', () => {
    const box = createSecretBox([keyA]);
    const [one, two] = [box.seal(secret, owner), box.seal(secret, owner)];
    expect(one).toMatch(/^enc:v2:[0-9a-f]{8}:/);
    expect(one).not.toBe(two);
    expect(one).not.toContain('whsec_');
    expect(box.open(one, owner)).toBe(secret);
  });

  it("binds a sealed secret to its subscription: copied into another's row, it does not open", () => {
    const box = createSecretBox([keyA]);
    expect(() => box.open(box.seal(secret, owner), other)).toThrow(SecretDecryptionError);
  });

  it('opens a value sealed before the binding (v1) outside production, and asks to reseal it', () => {
    const iv = Buffer.alloc(12, 7);
    const cipher = createCipheriv('aes-256-gcm', keyA, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    const id = createHash('sha256').update(keyA).digest('hex').slice(0, 8);
    const v1 = `enc:v1:${id}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
    const box = createSecretBox([keyA]);
    expect(box.open(v1, owner)).toBe(secret);
    expect(box.needsResealing(v1)).toBe(true);
    // Production refuses it as it refuses plaintext: unbound, it would open in any row.
    expect(() => createSecretBox([keyA], { refusePlaintext: true }).open(v1, owner)).toThrow(/enc:v1/);
  });

  it('refuses a truncated tag, and plaintext where the box refuses it', () => {
    const box = createSecretBox([keyA], { refusePlaintext: true });
    const sealed = box.seal(secret, owner);
    const [head, ciphertext] = [
      sealed.slice(0, sealed.lastIndexOf(':') + 1),
      sealed.slice(sealed.lastIndexOf(':') + 1),
    ];
    const short = Buffer.from(ciphertext, 'base64url').subarray(0, -4).toString('base64url');
    expect(() => box.open(`${head}${short}`, owner)).toThrow(SecretDecryptionError);
    expect(() => box.open(secret, owner)).toThrow(/plaintext/);
    expect(createSecretBox([keyA]).open(secret, owner)).toBe(secret);
  });

  it('opens values of any configured key, and asks to reseal those not under the newest', () => {
    const old = createSecretBox([keyA]).seal(secret, owner);
    const rotated = createSecretBox([keyB, keyA]);
    expect(rotated.open(old, owner)).toBe(secret);
    expect(rotated.needsResealing(old)).toBe(true);
    expect(rotated.needsResealing(rotated.seal(secret, owner))).toBe(false);
    expect(rotated.needsResealing(secret)).toBe(true);
  });

  it('refuses a value of an unknown key or a tampered one', () => {
    const sealed = createSecretBox([keyA]).seal(secret, owner);
    expect(() => createSecretBox([keyB]).open(sealed, owner)).toThrow(SecretDecryptionError);
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => createSecretBox([keyA]).open(tampered, owner)).toThrow(SecretDecryptionError);
  });

  it('without keys, stores and returns plaintext', () => {
    const box = createSecretBox([]);
    expect(box.encrypting).toBe(false);
    expect(box.seal(secret, owner)).toBe(secret);
    expect(box.open(secret, owner)).toBe(secret);
  });
});

describe('parseEncryptionKeys', () => {
  it('reads comma-separated base64 keys of 32 bytes, newest first', () => {
    const keys = parseEncryptionKeys(` ${keyB.toString('base64')}, ${keyA.toString('base64url')} `);
    expect(keys).toEqual([keyB, keyA]);
    expect(parseEncryptionKeys('')).toEqual([]);
  });

  it.each(['short', Buffer.alloc(16).toString('base64'), `${keyA.toString('base64')}!`])(
    'refuses %j naming SECRETS_ENCRYPTION_KEY',
    (value) => {
      expect(() => parseEncryptionKeys(value)).toThrow(ConfigError);
      expect(() => parseEncryptionKeys(value)).toThrow(/SECRETS_ENCRYPTION_KEY/);
    },
  );
});
