/**
 * Seals signing secrets at rest: rewrites rows whose `secret` or `previous_secret` is plaintext,
 * unbound or under an older key, under the newest ({@link SecretBox}); `pnpm db:migrate` runs it
 * with SECRETS_ENCRYPTION_KEY set. Compare-and-set per row, so a concurrent rotation is never undone.
 */
import pg from 'pg';
import { isSealedSecret, type SecretBox } from '@webhooks/shared';

/** Rows read and rewritten per round. */
const batchSize = 500;

/** Rewrites what needs sealing; returns how many rows were rewritten. No-op without a key. */
export async function sealSigningSecrets(databaseUrl: string, box: SecretBox): Promise<number> {
  if (!box.encrypting) return 0;
  // Plaintext is what this seals, so it is read as it is even where the box refuses it.
  const reseal = (stored: string, id: string) =>
    box.seal(isSealedSecret(stored) ? box.open(stored, id) : stored, id);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let rewritten = 0;
  try {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const { rows } = await client.query<{ id: string; secret: string; previous_secret: string | null }>(
        `SELECT id::text, secret, previous_secret FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2`,
        [after, batchSize],
      );
      if (rows.length === 0) break;
      after = rows.at(-1)?.id ?? after;
      for (const row of rows) {
        const previous = row.previous_secret;
        const stale = box.needsResealing(row.secret) || (previous !== null && box.needsResealing(previous));
        if (!stale) continue;
        const result = await client.query(
          `UPDATE subscriptions SET secret = $2, previous_secret = $3
           WHERE id = $1::uuid AND secret = $4 AND previous_secret IS NOT DISTINCT FROM $5`,
          [
            row.id,
            box.needsResealing(row.secret) ? reseal(row.secret, row.id) : row.secret,
            previous !== null && box.needsResealing(previous) ? reseal(previous, row.id) : previous,
            row.secret,
            previous,
          ],
        );
        rewritten += result.rowCount ?? 0;
      }
    }
  } finally {
    await client.end();
  }
  return rewritten;
}
