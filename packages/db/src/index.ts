/** @webhooks/db: the Prisma client factory and the migration runner. */
export * from './client.js';
export * from './create-database.js';
export * from './migrate.js';
export * from './paths.js';
