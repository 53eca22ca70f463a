/** Decorates the app with `prisma`, a Prisma client on its own pool, closed with the app. */
import fp from 'fastify-plugin';
import type {} from '../decorators.js';
import { createPrismaClient } from '@webhooks/db';

export default fp<{ databaseUrl: string }>(
  async (app, options) => {
    const prisma = createPrismaClient({ databaseUrl: options.databaseUrl });
    app.decorate('prisma', prisma);
    app.addHook('onClose', () => prisma.$disconnect());
  },
  { name: 'prisma' },
);
