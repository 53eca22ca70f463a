/**
 * Prisma CLI configuration (Prisma 7 reads the datasource URL from here, not from schema.prisma).
 * Only `prisma generate` runs on the project's machines; migrations are applied by
 * `pnpm db:migrate` (packages/db/src/migrate.ts), which keeps Prisma's `_prisma_migrations` format.
 */
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/webhooks' },
});
