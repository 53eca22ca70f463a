/** Where the repository's Prisma files are, resolved from this module (src/ or dist/ alike). */
import { fileURLToPath } from 'node:url';

/** Absolute path of prisma/migrations at the repository root. */
export const migrationsDir = fileURLToPath(new URL('../../../prisma/migrations', import.meta.url));
