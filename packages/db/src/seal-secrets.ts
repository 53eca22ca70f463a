/**
 * Seals every secret of a subscription at rest: rewrites the sealed columns ({@link sealedColumns})
 * whose value is plaintext, unbound or under an older key, under the newest ({@link SecretBox});
 * `pnpm db:migrate` runs it with SECRETS_ENCRYPTION_KEY set. Compare-and-set per row, so a concurrent
 * rotation or update is never undone. A value no configured key opens stops it with that error.
 */
import pg from 'pg';
import { isSealedSecret, type SecretBox } from '@webhooks/shared';

/** Rows read and rewritten per round. */
const batchSize = 500;

/** The columns of `subscriptions` that hold sealed values: signing secrets, receiver and destination credentials. */
export const sealedColumns = [
  'secret',
  'previous_secret',
  'headers',
  'client_tls',
  'auth',
  'destination_credentials',
] as const;
export type SealedColumn = (typeof sealedColumns)[number];

/** What a pass resealed, and what it left. */
export interface ResealReport {
  /** Subscriptions rewritten. */
  rows: number;
  /** Values resealed, per column. */
  resealed: Record<SealedColumn, number>;
  /** Values still not under the newest key when the pass ended (rows written meanwhile under an older key). */
  left: number;
}

type Row = { id: string } & Record<SealedColumn, string | null>;

/**
 * Reseals what needs it under the newest key of `box`, on the database at `databaseUrl`; without a
 * key, nothing (and an empty report).
 * @throws SecretDecryptionError for a value no configured key opens; pg's errors
 */
export async function resealSecrets(databaseUrl: string, box: SecretBox): Promise<ResealReport> {
  const report: ResealReport = {
    rows: 0,
    resealed: {
      secret: 0,
      previous_secret: 0,
      headers: 0,
      client_tls: 0,
      auth: 0,
      destination_credentials: 0,
    },
    left: 0,
  };
  if (!box.encrypting) return report;
  // Plaintext is what this seals, so it is read as it is even where the box refuses it.
  const reseal = (stored: string, id: string) =>
    box.seal(isSealedSecret(stored) ? box.open(stored, id) : stored, id);
  const stale = (value: string | null) => value !== null && box.needsResealing(value);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const each = async (visit: (row: Row) => Promise<void>) => {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const { rows } = await client.query<Row>(
        `SELECT id::text, ${sealedColumns.join(', ')} FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2`,
        [after, batchSize],
      );
      if (rows.length === 0) return;
      after = rows.at(-1)?.id ?? after;
      for (const row of rows) await visit(row);
    }
  };
  try {
    await each(async (row) => {
      const changed = sealedColumns.filter((column) => stale(row[column]));
      if (changed.length === 0) return;
      const values = sealedColumns.map((column) =>
        changed.includes(column) ? reseal(row[column]!, row.id) : row[column],
      );
      const n = sealedColumns.length;
      const result = await client.query(
        `UPDATE subscriptions SET ${sealedColumns.map((column, i) => `${column} = $${i + 2}`).join(', ')}
         WHERE id = $1::uuid AND ${sealedColumns.map((column, i) => `${column} IS NOT DISTINCT FROM $${i + n + 2}`).join(' AND ')}`,
        [row.id, ...values, ...sealedColumns.map((column) => row[column])],
      );
      if ((result.rowCount ?? 0) === 0) return;
      report.rows += 1;
      for (const column of changed) report.resealed[column] += 1;
    });
    await each(async (row) => {
      report.left += sealedColumns.filter((column) => stale(row[column])).length;
    });
  } finally {
    await client.end();
  }
  return report;
}
