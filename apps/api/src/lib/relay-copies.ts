/**
 * The copies of payloads that `webhooks listen` sessions hold in Redis (`relay.ts` in @webhooks/shared),
 * removed when what owns them goes: a deleted subscription's session, an expunged event's entries.
 */
import type { PrismaClient } from '@webhooks/db';
import {
  dropRelaySession,
  relayKeys,
  relayScripts,
  relaySession,
  type RedisConnection,
} from '@webhooks/shared';

/** Removes relay copies; each call throws ioredis' (or Prisma's) errors. */
export interface RelayCopies {
  /** Deletes the session of a deleted subscription whose `callback_url` was `callbackUrl` (nothing when not `cli://`). */
  dropSession(callbackUrl: string): Promise<void>;
  /** Takes event `eventId`'s entries out of every session of `accountId`; resolves with how many went. */
  expungeEvent(accountId: string, eventId: string): Promise<number>;
}

/** The relay copies under QUEUE_PREFIX `prefix` (unsharded); `prisma` finds an account's cli subscriptions. */
export function createRelayCopies(redis: RedisConnection, prisma: PrismaClient, prefix: string): RelayCopies {
  const scripts = relayScripts(redis);
  return {
    async dropSession(callbackUrl) {
      const session = relaySession(callbackUrl);
      if (session !== null) await dropRelaySession(redis, prefix, session);
    },
    async expungeEvent(accountId, eventId) {
      const rows = await prisma.subscription.findMany({
        where: { accountId, callbackUrl: { startsWith: 'cli://' } },
        select: { callbackUrl: true },
      });
      let gone = 0;
      for (const row of rows) {
        const session = relaySession(row.callbackUrl);
        if (session !== null) gone += await scripts.expunge(relayKeys(prefix, session), eventId);
      }
      return gone;
    },
  };
}
