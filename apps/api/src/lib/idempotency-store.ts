/**
 * Idempotency keys of `POST /api/events` in PostgreSQL (IDEMPOTENCY_STORE=postgresql), so a Redis
 * failover cannot turn a retry into a second event. A key is claimed with the reserved event id
 * before queueing; a failed publish gives it back. Rows live 24 hours; an expired one can be re-claimed.
 */
import { idempotencyKeyHash, idempotencyWindowMs } from '@webhooks/shared';
import type { PrismaClient } from '@webhooks/db';

/** What claiming a key came to. */
export type IdempotencyClaim =
  | { kind: 'claimed' }
  /** The key was used within 24 hours: the first event's id and payload timestamp. */
  | { kind: 'duplicate'; eventId: string; timestamp: string };

/** The PostgreSQL idempotency store. */
export interface IdempotencyStore {
  /** Claims `key` of `accountId` for event `eventId`. @throws Prisma's errors when PostgreSQL fails (503) */
  claim(accountId: string, key: string, eventId: string, timestamp: string): Promise<IdempotencyClaim>;
  /** Gives back a claim whose event was not queued; never throws (the row then expires). */
  release(accountId: string, key: string, eventId: string): Promise<void>;
}

/** Creates the store on the API's Prisma client. */
export function createIdempotencyStore(prisma: PrismaClient): IdempotencyStore {
  const windowSeconds = idempotencyWindowMs / 1000;
  return {
    async claim(accountId, key, eventId, timestamp) {
      const keyHash = idempotencyKeyHash(key);
      // One statement: a live row stays (the conflict updates nothing), an expired one is taken over.
      const rows = await prisma.$queryRaw<Array<{ event_id: string; payload_timestamp: string }>>`
        INSERT INTO idempotency_keys (account_id, key_hash, event_id, payload_timestamp)
        VALUES (${accountId}, ${keyHash}, ${eventId}::uuid, ${timestamp})
        ON CONFLICT (account_id, key_hash) DO UPDATE
          SET event_id = EXCLUDED.event_id, payload_timestamp = EXCLUDED.payload_timestamp, created_at = now()
          WHERE idempotency_keys.created_at < now() - make_interval(secs => ${windowSeconds})
        RETURNING event_id::text, payload_timestamp`;
      if (rows.length === 1) return { kind: 'claimed' };
      const [first] = await prisma.$queryRaw<Array<{ event_id: string; payload_timestamp: string }>>`
        SELECT event_id::text, payload_timestamp FROM idempotency_keys
        WHERE account_id = ${accountId} AND key_hash = ${keyHash}`;
      // Deleted between the two statements (retention): claim again.
      if (first === undefined) return this.claim(accountId, key, eventId, timestamp);
      return { kind: 'duplicate', eventId: first.event_id, timestamp: first.payload_timestamp };
    },
    async release(accountId, key, eventId) {
      await prisma.$executeRaw`
        DELETE FROM idempotency_keys
        WHERE account_id = ${accountId} AND key_hash = ${idempotencyKeyHash(key)} AND event_id = ${eventId}::uuid`.catch(
        () => undefined,
      );
    },
  };
}
