/**
 * Telling an infrastructure fault (PostgreSQL or Redis unreachable, closing, overloaded) from a
 * bug, so the error handler answers the first with 503 and `Retry-After` and keeps 500 for the
 * second. Errors are recognised by their codes, following `cause` chains.
 */
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
 * Prisma error codes of an unreachable or overloaded database
 * (https://www.prisma.io/docs/orm/reference/error-reference): P1001 can't reach, P1002 timed out,
 * P1008 operation timed out, P1017 connection closed, P2024 pool timeout, P2028 an interactive
 * transaction that could not start or finish in its time (its statements waited on a busy
 * database: a lock held by the fan-out, the pool), P2034 a transaction rolled back for a write
 * conflict or a deadlock (to be tried again).
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
 * PostgreSQL SQLSTATE classes and codes (Appendix A): 08 connection, 53 resources, 57P operator,
 * 57014 a statement cancelled by the API's statement_timeout, and what the manual says to try
 * again ("Serialization Failure Handling"): 40001 serialization failure, 40P01 deadlock, 55P03 a
 * lock not granted in time (a partition's creation holds one for an instant).
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
