import { describe, expect, it } from '@jest/globals';
import { ConfigError, createSecretBox, parseEncryptionKeys, SecretDecryptionError } from '../src/index.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);
const secret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;

describe('createSecretBox', () => {
  it('seals under the newest key, never the same way twice, and opens again', () => {
    const box = createSecretBox([keyA]);
    const [one, two] = [box.seal(secret), box.seal(secret)];
    expect(one).toMatch(/^enc:v1:[0-9a-f]{8}:/);
    expect(one).not.toBe(two);
    expect(one).not.toContain('whsec_');
    expect(box.open(one)).toBe(secret);
  });

  it('opens values of any configured key, and asks to reseal those not under the newest', () => {
    const old = createSecretBox([keyA]).seal(secret);
    const rotated = createSecretBox([keyB, keyA]);
    expect(rotated.open(old)).toBe(secret);
    expect(rotated.needsResealing(old)).toBe(true);
    expect(rotated.needsResealing(rotated.seal(secret))).toBe(false);
    expect(rotated.needsResealing(secret)).toBe(true);
  });

  it('refuses a value of an unknown key or a tampered one', () => {
    const sealed = createSecretBox([keyA]).seal(secret);
    expect(() => createSecretBox([keyB]).open(sealed)).toThrow(SecretDecryptionError);
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => createSecretBox([keyA]).open(tampered)).toThrow(SecretDecryptionError);
  });

  it('without keys, stores and returns plaintext', () => {
    const box = createSecretBox([]);
    expect(box.encrypting).toBe(false);
    expect(box.seal(secret)).toBe(secret);
    expect(box.open(secret)).toBe(secret);
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
