/**
 * @webhooks/db: the Prisma client factory, the worker's `pg` pool, the migration runner and the
 * sealing of signing secrets.
 */
export * from './client.js';
export * from './create-database.js';
export * from './migrate.js';
export * from './paths.js';
export * from './pool.js';
export * from './seal-secrets.js';
