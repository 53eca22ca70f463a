/**
 * Decorates the app with `prisma`, a Prisma client on its own pool, closed with the app. Every
 * statement is bounded by `statementTimeoutMs` (DATABASE_STATEMENT_TIMEOUT_MS), so no request can
 * hold a connection with a runaway query; one that runs past it answers 503 with `Retry-After`.
 */
import fp from 'fastify-plugin';
import type {} from '../../decorators.js';
import { createPrismaClient } from '@webhooks/db';

export default fp<{ databaseUrl: string; statementTimeoutMs: number }>(
  async (app, options) => {
    const prisma = createPrismaClient({
      databaseUrl: options.databaseUrl,
      statementTimeoutMs: options.statementTimeoutMs,
    });
    app.decorate('prisma', prisma);
    app.addHook('onClose', () => prisma.$disconnect());
  },
  { name: 'prisma' },
);
