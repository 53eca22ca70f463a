/**
 * Portal session tokens (Svix's "magic link" model): short-lived HS256 JWTs for one account,
 * `scope: "portal"`, revocable by `jti`, got for a one-time link. Their own key (PORTAL_SECRET, or
 * derived from JWT_SECRET), so a portal token never passes as a client token, nor the reverse.
 */
import { createHmac } from 'node:crypto';
import { createDecoder, createSigner, createVerifier } from 'fast-jwt';
import { LRUCache } from 'lru-cache';
import type { ApiConfig } from '../config.js';

/** The `scope` claim that marks a portal token; reserved, a client token must not carry it. */
export const portalScope = 'portal';

/** Lifetime of a portal session when the request names none, in seconds (1 hour). */
export const defaultPortalSessionSeconds = 3_600;

/** Portal-claim tokens remembered (LRU): a count and a character bound, since any client chooses what it sends. */
const claimedTokensKept = 10_000;

/** Characters of tokens the claims remembered may hold in all (4 Mi, about 8 MiB of memory). */
const claimedTokenCharsKept = 4 * 1024 * 1024;

/** Portal tokens of one API. */
export interface PortalTokens {
  /** A token of session `sessionId` for `account`, valid `ttlSeconds` from now, and when it expires. */
  mint(account: string, ttlSeconds: number, sessionId: string): { token: string; expiresAt: Date };
  /** Whether `token` claims to be a portal token (unverified: decides which key checks it). */
  claimsPortal(token: string): boolean;
  /**
   * The verified payload of a portal token: account (`sub`) and session id (`jti`).
   * @throws fast-jwt's TokenError (`code` FAST_JWT_EXPIRED, …) when it is not valid
   */
  verify(token: string): { sub?: unknown; jti: string };
}

/**
 * The portal tokens' key: PORTAL_SECRET, else HMAC-SHA256(JWT_SECRET, "webhooks portal session")
 * under HS256, else null (JWT_PUBLIC_KEY without PORTAL_SECRET: no portal sessions).
 */
export function portalKey(config: Pick<ApiConfig, 'PORTAL_SECRET' | 'jwtKey'>): string | null {
  if (config.PORTAL_SECRET !== '') return config.PORTAL_SECRET;
  if (config.jwtKey.algorithm !== 'HS256') return null;
  return createHmac('sha256', config.jwtKey.key).update('webhooks portal session').digest('hex');
}

/** Portal tokens signed and checked with `key`, allowing `clockToleranceMs` of skew on `exp`. */
export function createPortalTokens(key: string, clockToleranceMs: number): PortalTokens {
  const sign = createSigner({ key, algorithm: 'HS256' });
  const decode = createDecoder();
  // Every authenticated request asks, and a client sends the same token many times.
  const claimed = new LRUCache<string, boolean>({
    max: claimedTokensKept,
    maxSize: claimedTokenCharsKept,
    sizeCalculation: (_claims, token) => Math.max(1, token.length),
    memoMethod: (token) => {
      try {
        return (decode(token) as { scope?: unknown }).scope === portalScope;
      } catch {
        return false;
      }
    },
  });
  const verify = createVerifier({
    key,
    algorithms: ['HS256'],
    requiredClaims: ['exp', 'scope', 'jti'],
    clockTolerance: clockToleranceMs,
  });
  return {
    mint(account, ttlSeconds, sessionId) {
      const exp = Math.floor(Date.now() / 1000) + ttlSeconds;
      return {
        token: sign({ sub: account, scope: portalScope, exp, jti: sessionId }),
        expiresAt: new Date(exp * 1000),
      };
    },
    claimsPortal: (token) => claimed.memo(token),
    verify(token) {
      const payload = verify(token) as { sub?: unknown; scope?: unknown; jti?: unknown };
      if (payload.scope !== portalScope || typeof payload.jti !== 'string')
        throw new Error('not a portal token');
      return { sub: payload.sub, jti: payload.jti };
    },
  };
}
