/**
 * Standard Webhooks' asymmetric scheme (`v1a`, Ed25519), through the real API and worker: the
 * client receives the public key (`whpk_`), and verifies each delivery with `node:crypto`'s
 * Ed25519 over the signed content (`<webhook-id>.<webhook-timestamp>.<body>`), not with our code;
 * after a rotation both keys sign until the overlap ends.
 */
import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ReceivedRequest } from '../scripts/lib/receiver.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('asymmetric');
});
afterAll(() => stack.close());

/** Whether `request` carries a `v1a` signature that the `whpk_` key `publicKey` verifies. */
function verifiedBy(publicKey: string, request: ReceivedRequest, body = request.body): boolean {
  const key = createPublicKey({
    key: {
      kty: 'OKP',
      crv: 'Ed25519',
      x: Buffer.from(publicKey.slice('whpk_'.length), 'base64').toString('base64url'),
    },
    format: 'jwk',
  });
  const content = Buffer.from(
    `${String(request.headers['webhook-id'])}.${String(request.headers['webhook-timestamp'])}.${body}`,
  );
  return String(request.headers['webhook-signature'])
    .split(' ')
    .filter((signature) => signature.startsWith('v1a,'))
    .some((signature) => verify(null, content, key, Buffer.from(signature.slice('v1a,'.length), 'base64')));
}

const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
  stack.api.app.inject({
    method,
    url,
    headers: stack.api.auth('acct-ed'),
    ...(payload === undefined ? {} : { payload }),
  });

describe('the v1a signature scheme', () => {
  it('signs with a key the client verifies by its public key, and rotates to a new pair', async () => {
    const created = await api('POST', '/api/webhooks', {
      callback_url: `${stack.receiver.url}/ed25519`,
      signature_scheme: 'v1a',
    });
    expect(created.statusCode).toBe(201);
    const { id, secret: publicKey, signature_scheme } = created.json();
    expect(signature_scheme).toBe('v1a');
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect((await api('GET', `/api/webhooks/${id}/secret`)).json().secret).toBe(publicKey);

    const first = await stack.publisher.publish({
      accountId: 'acct-ed',
      type: 'call.started',
      data: { n: 1 },
    });
    await waitFor('the delivery', () => stack.receiver.at('/ed25519').length === 1);
    const [delivered] = stack.receiver.at('/ed25519');
    expect(delivered!.headers['webhook-id']).toBe(first.id);
    expect(String(delivered!.headers['webhook-signature'])).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(verifiedBy(publicKey, delivered!)).toBe(true);
    expect(verifiedBy(publicKey, delivered!, delivered!.body.replace('"n":1', '"n":2'))).toBe(false);

    const rotated = await api('POST', `/api/webhooks/${id}/secret/rotate`);
    const next = rotated.json().secret as string;
    expect(next).toMatch(/^whpk_/);
    expect(next).not.toBe(publicKey);
    await stack.publisher.publish({ accountId: 'acct-ed', type: 'call.started', data: { n: 3 } });
    await waitFor('the next delivery', () => stack.receiver.at('/ed25519').length === 2);
    const after = stack.receiver.at('/ed25519')[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifiedBy(next, after)).toBe(true);
    expect(verifiedBy(publicKey, after)).toBe(true);
  });

  it('is refused for an unknown scheme, naming the field', async () => {
    const answer = await api('POST', '/api/webhooks', {
      callback_url: `${stack.receiver.url}/never`,
      signature_scheme: 'v2',
    });
    expect(answer.statusCode).toBe(400);
    expect(JSON.stringify(answer.json().errors)).toContain('/signature_scheme');
  });
});
