import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { keyRefusal } from '../src/client-certificate.js';

const rsa = (modulusLength: number) => ({
  asymmetricKeyType: 'rsa' as const,
  asymmetricKeyDetails: { modulusLength },
});
const ec = (namedCurve: string) => ({
  asymmetricKeyType: 'ec' as const,
  asymmetricKeyDetails: { namedCurve },
});

describe('the client keys a subscription may use', () => {
  it('takes RSA of 2048 to 4096 bits, EC on P-256 and P-384, and Ed25519', () => {
    for (const key of [rsa(2048), rsa(3072), rsa(4096), ec('prime256v1'), ec('secp384r1')])
      expect(keyRefusal(key)).toBeNull();
    expect(keyRefusal(generateKeyPairSync('ed25519').privateKey)).toBeNull();
  });

  it('refuses an RSA-8192 key, whose signature each handshake would cost the worker', () => {
    expect(keyRefusal(rsa(8192))).toMatch(/RSA key of 8192 bits: use 2048 to 4096/);
    expect(keyRefusal(rsa(16_384))).toMatch(/16384 bits/);
  });

  it('refuses weak RSA, other curves and other key types', () => {
    expect(keyRefusal(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey)).toMatch(/1024 bits/);
    expect(keyRefusal(ec('secp521r1'))).toMatch(/secp521r1: use P-256 or P-384/);
    expect(keyRefusal(generateKeyPairSync('x25519').privateKey)).toMatch(/x25519 key/);
  });
});
