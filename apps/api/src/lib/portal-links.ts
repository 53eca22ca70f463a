/**
 * Portal links (`POST /api/portal-sessions`): a `plk_…` link (32 random bytes), valid
 * PORTAL_LINK_SECONDS, exchanged once for a revocable session token. Redis keys expire with what they
 * guard: `portal:link:<SHA-256>`, `portal:session:<id>`, `portal:revoked:<id>`.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { RedisConnection } from '@webhooks/shared';
import type { PortalTokens } from './portal-tokens.js';

/** Longest session, in seconds (24 hours): how long a revocation must be remembered. */
export const maxPortalSessionSeconds = 86_400;

/** A link just made. */
export interface PortalLink {
  /** The session id, for revocation. */
  id: string;
  /** The one-time secret the portal page exchanges. */
  link: string;
  /** When the link stops being exchangeable. */
  expiresAt: Date;
}

/** Portal links of one API. */
export interface PortalLinks {
  /** A link for `account` whose session, once exchanged, lasts `sessionSeconds`. */
  create(account: string, sessionSeconds: number): Promise<PortalLink>;
  /** Exchanges `link` for its session token, once. @returns null when unknown, used, expired or revoked */
  exchange(link: string): Promise<{ token: string; expiresAt: Date } | null>;
  /** Revokes `account`'s session `id` (link and token). @returns false when it has no such session */
  revoke(account: string, id: string): Promise<boolean>;
  /** Whether session `id` was revoked. @throws ioredis' errors when Redis cannot be reached */
  revoked(id: string): Promise<boolean>;
}

export interface PortalLinksOptions {
  redis: RedisConnection;
  /** The effective queue key prefix. */
  prefix: string;
  tokens: PortalTokens;
  /** PORTAL_LINK_SECONDS. */
  linkSeconds: number;
}

const digest = (link: string) => createHash('sha256').update(link).digest('hex');

/** Creates the portal links on `options.redis`. */
export function createPortalLinks(options: PortalLinksOptions): PortalLinks {
  const { redis, prefix, tokens, linkSeconds } = options;
  const linkKey = (link: string) => `${prefix}:portal:link:${digest(link)}`;
  const revokedKey = (id: string) => `${prefix}:portal:revoked:${id}`;
  const sessionKey = (id: string) => `${prefix}:portal:session:${id}`;
  const links: PortalLinks = {
    async create(account, sessionSeconds) {
      const id = randomUUID();
      const link = `plk_${randomBytes(32).toString('base64url')}`;
      await redis
        .multi()
        .set(linkKey(link), JSON.stringify({ id, account, sessionSeconds }), 'EX', linkSeconds)
        .set(sessionKey(id), account, 'EX', linkSeconds + sessionSeconds)
        .exec();
      return { id, link, expiresAt: new Date(Date.now() + linkSeconds * 1000) };
    },
    async exchange(link) {
      const stored = await redis.getdel(linkKey(link));
      if (stored === null) return null;
      const { id, account, sessionSeconds } = JSON.parse(stored) as {
        id: string;
        account: string;
        sessionSeconds: number;
      };
      if (await links.revoked(id)) return null;
      return tokens.mint(account, sessionSeconds, id);
    },
    async revoke(account, id) {
      if ((await redis.get(sessionKey(id))) !== account) return false;
      await redis.set(revokedKey(id), '1', 'EX', linkSeconds + maxPortalSessionSeconds);
      return true;
    },
    async revoked(id) {
      return (await redis.exists(revokedKey(id))) === 1;
    },
  };
  return links;
}
