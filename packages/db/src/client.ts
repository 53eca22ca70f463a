/**
 * The Prisma client factory. Prisma Client 7 runs on the `pg` driver adapter: no engine binary,
 * which is what lets it run on machines that cannot download Prisma's engines.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { Prisma, PrismaClient } from './generated/prisma/client.js';

export { Prisma, PrismaClient };
export type * from './generated/prisma/client.js';

/** Options of {@link createPrismaClient}. */
export interface PrismaClientOptions {
  /** PostgreSQL connection URL. */
  databaseUrl: string;
  /** Most connections of the pool (pg's `max`); default 10. */
  poolSize?: number;
}

/** A Prisma client on its own `pg` pool; call `$disconnect()` to close the pool. */
export function createPrismaClient(options: PrismaClientOptions): PrismaClient {
  const adapter = new PrismaPg({ connectionString: options.databaseUrl, max: options.poolSize ?? 10 });
  return new PrismaClient({ adapter });
}
