/** The worker's Redis leases: the renewal rule, and the fenced release of a `SET NX PX` lease (hand-over, claim). */
import { defineScript, type RedisConnection } from '@webhooks/shared';

/** Whether a lease of `leaseMs` renewed at `renewedAt` is due at `now` (ms): after a third of it. */
export function renewalDue(renewedAt: number, now: number, leaseMs: number): boolean {
  return now - renewedAt >= leaseMs / 3;
}

/**
 * Defines the release of a `SET NX PX` lease by its holder: deletes `key` only while it holds
 * `token` (Redis docs, SET "Patterns"). Resolves 1 when deleted, 0 when not.
 */
export function defineFencedDelete(redis: RedisConnection) {
  return defineScript<number>()(redis, {
    name: 'webhookFencedDelete',
    keys: ['key'],
    args: ['token'],
    lua: `if redis.call('GET', K.key) == A.token then return redis.call('DEL', K.key) end return 0`,
  });
}
