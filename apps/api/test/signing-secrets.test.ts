/**
 * "Secrets": sealed at rest, never cacheable, rotations serialised so that every secret
 * handed out signs, and the key rotation of SECRETS_ENCRYPTION_KEY through `db:migrate`'s sealing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { resealSecrets } from '@webhooks/db';
import { createSecretBox } from '@webhooks/shared';
import { testEncryptionKey } from '../../../test/support/api.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;
let db: pg.Client;

beforeAll(async () => {
  stack = await startTestStack('secrets');
  db = new pg.Client({ connectionString: stack.api.database.url });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await stack.close();
});

const account = 'secrets-acct';
const call = (method: 'GET' | 'POST', url: string) =>
  stack.api.app.inject({ method, url, headers: stack.api.auth(account) });

describe('signing secrets', () => {
  it('marks every answer carrying a secret Cache-Control: no-store', async () => {
    const created = await stack.api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: stack.api.auth(account),
      payload: { callback_url: `${stack.receiver.url}/no-store` },
    });
    expect(created.statusCode).toBe(201);
    const { id } = created.json();
    const read = await call('GET', `/api/webhooks/${id}/secret`);
    const rotated = await call('POST', `/api/webhooks/${id}/secret/rotate`);
    for (const response of [created, read, rotated]) {
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.json().secret).toMatch(/^whsec_/);
    }
    const listed = await call('GET', `/api/webhooks/${id}`);
    expect(listed.json().secret).toBeUndefined();
  });

  it('stores no whsec_ material: the table holds only sealed values', async () => {
    const sub = await stack.subscribe(account, { callback_url: `${stack.receiver.url}/sealed` });
    await call('POST', `/api/webhooks/${sub.id}/secret/rotate`);
    const { rows } = await db.query<{ secret: string; previous_secret: string | null }>(
      'SELECT secret, previous_secret FROM subscriptions',
    );
    expect(rows.length).toBeGreaterThan(0);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain('whsec_');
    expect(dump).not.toContain(sub.secret.slice('whsec_'.length));
    for (const row of rows) expect(row.secret).toMatch(/^enc:v2:/);
  });

  it('after two concurrent rotations, both returned secrets verify the next delivery', async () => {
    const sub = await stack.subscribe(account, { callback_url: `${stack.receiver.url}/rotated` });
    const [first, second] = await Promise.all([
      call('POST', `/api/webhooks/${sub.id}/secret/rotate`),
      call('POST', `/api/webhooks/${sub.id}/secret/rotate`),
    ]);
    const secrets = [first!.json().secret as string, second!.json().secret as string];
    expect(new Set(secrets).size).toBe(2);
    await stack.publisher.publish({ accountId: account, type: 'call.completed', data: { n: 1 } });
    const [request] = await waitFor('the delivery', () => {
      const got = stack.receiver.at('/rotated');
      return got.length === 1 && got;
    });
    const headers = request!.headers as Record<string, string>;
    for (const secret of secrets) {
      expect(() => new Webhook(secret).verify(request!.body, headers)).not.toThrow();
    }
  });
});

describe('sealing and key rotation (db:migrate)', () => {
  const oldKey = Buffer.from(testEncryptionKey, 'base64');
  const newKey = Buffer.alloc(32, 9);

  it('seals plaintext rows once a key is configured, and re-seals under a new key', async () => {
    const plaintext = 'whsec_' + Buffer.alloc(32, 3).toString('base64');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO subscriptions (id, account_id, callback_url, secret, previous_secret, updated_at)
       VALUES (gen_random_uuid(), 'legacy', 'https://example.com/h', $1, $1, now()) RETURNING id::text`,
      [plaintext],
    );
    const id = rows[0]!.id;
    const stored = async () =>
      (
        await db.query<{ secret: string; previous_secret: string }>(
          'SELECT secret, previous_secret FROM subscriptions WHERE id = $1',
          [id],
        )
      ).rows[0]!;

    const before = await db.query<{ secret: string }>('SELECT secret FROM subscriptions WHERE id <> $1', [
      id,
    ]);
    // As in production, where the box refuses to open plaintext: sealing it is the point.
    expect(
      await resealSecrets(stack.api.database.url, createSecretBox([oldKey], { refusePlaintext: true })),
    ).toMatchObject({ rows: 1, resealed: { secret: 1, previous_secret: 1 }, left: 0 });
    const sealed = await stored();
    expect(sealed.secret).toMatch(/^enc:v2:/);
    expect(sealed.previous_secret).toMatch(/^enc:v2:/);
    expect(createSecretBox([oldKey]).open(sealed.secret, id)).toBe(plaintext);
    expect((await resealSecrets(stack.api.database.url, createSecretBox([oldKey]))).rows).toBe(0);

    const rotated = createSecretBox([newKey, oldKey]);
    expect(await resealSecrets(stack.api.database.url, rotated)).toMatchObject({
      rows: before.rows.length + 1,
      left: 0,
    });
    const resealed = await stored();
    expect(createSecretBox([newKey]).open(resealed.secret, id)).toBe(plaintext);
    expect(() => createSecretBox([oldKey]).open(resealed.secret, id)).toThrow(/key id/);
  });
});
