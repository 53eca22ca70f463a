/** Tells infrastructure faults (PostgreSQL or Redis away or overloaded) from bugs: 503 with `Retry-After`, not 500. */
import { PublishUnavailableError } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** Seconds a client should wait before retrying after an infrastructure fault. */
export const infrastructureRetryAfterSeconds = 5;

/** The 503 problem of an infrastructure fault, with `Retry-After` in seconds; `detail` says what to do. */
export function serviceUnavailable(detail: string): HttpProblem {
  return new HttpProblem(503, 'unavailable', detail, undefined, {
    'retry-after': String(infrastructureRetryAfterSeconds),
  });
}

/**
 * Prisma error codes of an unreachable or overloaded database (Prisma's error reference): P1001,
 * P1002, P1008, P1017, P2024 pool timeout, P2028 a transaction that could not start or finish in
 * time, P2034 a write conflict or deadlock (to retry).
 */
const prismaCodes = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2034']);

/** Driver adapter error kinds of the same (Prisma's `DriverAdapterError.cause.kind`). */
const adapterKinds = new Set([
  'DatabaseNotReachable',
  'DatabaseDoesNotExist',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionAlreadyClosed',
]);

/**
 * PostgreSQL SQLSTATEs (Appendix A): 08 connection, 53 resources, 57P operator, 57014 statement
 * timeout, and what "Serialization Failure Handling" says to retry: 40001, 40P01, 55P03.
 */
const sqlState = /^(08|53|57P|57014$|40001$|40P01$|55P03$)/;

/** Node and ioredis socket errors. */
const socketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** ioredis messages of a connection that is not there or not answering (no error code of their own). */
const redisMessages =
  /Connection is closed|Stream isn't writeable|enableOfflineQueue|Reached the max retries|LOADING|READONLY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|Command timed out|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available|Cluster isn't ready/;

/** Whether `error` (or an error in its `cause` chain) says PostgreSQL or Redis is unavailable. */
export function isInfrastructureError(error: unknown): boolean {
  for (
    let current = error, depth = 0;
    current !== null && typeof current === 'object' && depth < 8;
    depth++
  ) {
    const e = current as {
      name?: string;
      code?: unknown;
      message?: unknown;
      meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } };
      cause?: unknown;
    };
    const adapter = e.meta?.driverAdapterError?.cause;
    if (
      e instanceof PublishUnavailableError ||
      e.name === 'PrismaClientInitializationError' ||
      e.name === 'MaxRetriesPerRequestError' ||
      (typeof e.code === 'string' &&
        (prismaCodes.has(e.code) || socketCodes.has(e.code) || sqlState.test(e.code))) ||
      (adapter?.kind !== undefined && adapterKinds.has(adapter.kind)) ||
      (typeof adapter?.originalCode === 'string' && sqlState.test(adapter.originalCode)) ||
      (typeof e.message === 'string' && redisMessages.test(e.message))
    ) {
      return true;
    }
    current = e.cause;
  }
  return false;
}
