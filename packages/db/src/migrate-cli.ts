/**
 * `pnpm db:migrate`: creates the database of DATABASE_URL if missing, applies pending migrations and,
 * with SECRETS_ENCRYPTION_KEY, reseals every secret not yet sealed under its newest key
 * (seal-secrets.ts), saying how many of each column, and how many are left under older keys.
 * Exit 0 when up to date, 1 with one line on stderr otherwise.
 */
import { createSecretBox, defaultDatabaseUrl, parseEncryptionKeys } from '@webhooks/shared';
import { migrate } from './migrate.js';
import { migrationsDir } from './paths.js';
import { resealSecrets, sealedColumns } from './seal-secrets.js';

const databaseUrl = process.env.DATABASE_URL || defaultDatabaseUrl;

try {
  const result = await migrate({ databaseUrl, migrationsDir, log: (line) => console.log(line) });
  const where = new URL(databaseUrl).pathname.slice(1);
  if (result.createdDatabase) console.log(`created database ${where}`);
  console.log(
    result.applied.length === 0
      ? `database ${where} is up to date`
      : `database ${where}: ${result.applied.length} migration(s) applied`,
  );
  const box = createSecretBox(parseEncryptionKeys(process.env.SECRETS_ENCRYPTION_KEY ?? ''));
  const report = await resealSecrets(databaseUrl, box);
  if (box.encrypting) {
    const counts = sealedColumns.map((column) => `${column} ${report.resealed[column]}`).join(', ');
    console.log(
      `database ${where}: ${report.rows} subscription(s) resealed under the newest SECRETS_ENCRYPTION_KEY (${counts}); ${report.left} value(s) left under older keys`,
    );
  }
} catch (error) {
  console.error(`db:migrate failed: ${(error as Error).message}`);
  process.exitCode = 1;
}
