import { describe, expect, it } from '@jest/globals';
import { PublishUnavailableError } from '@webhooks/shared';
import { isInfrastructureError } from '../src/lib/infrastructure-error.js';

const prismaError = (code: string, kind?: string) =>
  Object.assign(new Error('prisma'), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: kind === undefined ? {} : { driverAdapterError: { cause: { kind } } },
  });

describe('isInfrastructureError', () => {
  it.each([
    ['Prisma P1001 (database not reachable)', prismaError('P1001', 'DatabaseNotReachable')],
    ['a raw query whose adapter lost its connection', prismaError('P2010', 'ConnectionClosed')],
    ['Prisma pool timeout', prismaError('P2024')],
    ['an interactive transaction past its timeout', prismaError('P2028')],
    ['a PostgreSQL shutdown (57P01)', Object.assign(new Error('terminating'), { code: '57P01' })],
    [
      'a deadlock PostgreSQL rolled back (40P01)',
      Object.assign(new Error('deadlock detected'), { code: '40P01' }),
    ],
    ['a transaction Prisma says to retry (P2034)', prismaError('P2034')],
    [
      'ioredis refusing while offline',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ],
    [
      'a refused socket, wrapped',
      new Error('outer', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }),
    ],
    ['a publish that timed out', new PublishUnavailableError('Redis did not take the event within 2000 ms')],
    ['a Redis command past its timeout', new Error('Command timed out')],
    [
      'a cluster whose master is gone',
      new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
    ],
    ['a cluster without its slot map', new Error('Failed to refresh slots cache.')],
  ])('is true for %s', (_, error) => {
    expect(isInfrastructureError(error)).toBe(true);
  });

  it.each([
    ['a TypeError (a bug)', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a unique violation', prismaError('P2002')],
    ['a value too long for its column', prismaError('P2000')],
    ['a string thrown', 'boom'],
  ])('is false for %s', (_, error) => {
    expect(isInfrastructureError(error)).toBe(false);
  });
});
