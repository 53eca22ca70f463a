/**
 * The worker's Redis leases (keys and sorted-set members that end on their own when their holder
 * dies): the renewal rule, and the fenced release of a `SET NX PX` lease, used by the ordered
 * hand-over's lease (`fifo.ts`) and a round's claim (`claim.ts`).
 */
import { defineScript, type RedisConnection } from '@webhooks/shared';

/**
 * Whether a lease of `leaseMs` taken or renewed at `renewedAt` is due for renewal at `now` (all
 * ms): once a third of it has passed, so that two slow attempts in a row still find it held.
 */
export function renewalDue(renewedAt: number, now: number, leaseMs: number): boolean {
  return now - renewedAt >= leaseMs / 3;
}

/**
 * Defines on `redis` the release of a `SET NX PX` lease by its holder: deletes `key` only while it
 * still holds `token`, so that a holder whose lease ended and was taken by another run cannot drop
 * the other's. Resolves 1 when deleted, 0 when not (https://redis.io/docs/latest/commands/set/,
 * "Patterns").
 */
export function defineFencedDelete(redis: RedisConnection) {
  return defineScript<number>()(redis, {
    name: 'webhookFencedDelete',
    keys: ['key'],
    args: ['token'],
    lua: `if redis.call('GET', K.key) == A.token then return redis.call('DEL', K.key) end return 0`,
  });
}
