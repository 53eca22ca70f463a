/** The Prisma client factory: Prisma Client 7 on the `pg` driver adapter, no engine binary to download. */
import { PrismaPg } from '@prisma/adapter-pg';
import { Prisma, PrismaClient } from './generated/prisma/client.js';

export { Prisma, PrismaClient };
export type * from './generated/prisma/client.js';

export interface PrismaClientOptions {
  /** PostgreSQL connection URL. */
  databaseUrl: string;
  /** Most connections of the pool (pg's `max`); default 10. */
  poolSize?: number;
  /** PostgreSQL's `statement_timeout` of every statement (ms; none when unset): past it, SQLSTATE 57014. */
  statementTimeoutMs?: number;
}

/** Longest wait for a new connection (ms): an unreachable server then fails the query (P1001, 503), never hangs it. */
export const connectTimeoutMs = 5_000;

/** A Prisma client on its own `pg` pool; call `$disconnect()` to close the pool. */
export function createPrismaClient(options: PrismaClientOptions): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: connectTimeoutMs,
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
  });
  return new PrismaClient({ adapter });
}
