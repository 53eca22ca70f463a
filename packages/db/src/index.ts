/** @webhooks/db: the Prisma client factory, the migration runner and the sealing of signing secrets. */
export * from './client.js';
export * from './create-database.js';
export * from './migrate.js';
export * from './paths.js';
export * from './seal-secrets.js';
