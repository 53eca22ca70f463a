/**
 * Bearer-token authentication (docs/security.md, "Tokens"): a JWT verified by @fastify/jwt with the
 * configured algorithm, with `exp` and `iat`, at most JWT_MAX_AGE_SECONDS old (RFC 8725 §3.10),
 * `nbf`, JWT_ISSUER/JWT_AUDIENCE when set, 30 s of skew; the account is `sub`. Failure: 401 with
 * `WWW-Authenticate: Bearer` (RFC 6750 §3); a portal token where `portalRefused`: 403.
 */
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type {} from '../../decorators.js';
import jwt from '@fastify/jwt';
import { isValidAccountId } from '@webhooks/shared';
import { HttpProblem } from '../../lib/problem.js';
import type { ApiConfig } from '../../config.js';
import type { PortalTokens } from '../../lib/portal-tokens.js';
import type { AuthFailureLimit } from './ip-limits.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on routes a portal session token may not call (minting sessions, publishing events). */
    portalRefused?: boolean;
  }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sub?: unknown };
  }
}

/** Clock skew allowed on `exp` and `nbf`, in ms. */
export const clockToleranceMs = 30_000;

/** Tokens whose verification fast-jwt's verifier remembers, least recently used dropped first. */
const verifiedTokenCacheSize = 10_000;

function unauthorized(detail: string): HttpProblem {
  return new HttpProblem(401, 'unauthorized', detail, undefined, {
    'www-authenticate': `Bearer realm="webhooks", error="invalid_token", error_description="${detail}"`,
  });
}

const verifyFailures: Record<string, string> = {
  FST_JWT_AUTHORIZATION_TOKEN_EXPIRED: 'The token has expired',
  FST_JWT_AUTHORIZATION_TOKEN_INACTIVE: 'The token is not valid yet (nbf)',
  FAST_JWT_EXPIRED: 'The token has expired',
  FAST_JWT_INACTIVE: 'The token is not valid yet (nbf)',
};

/** Options of the auth plugin: the verification key and the claims required of every token. */
export interface AuthOptions {
  jwtKey: ApiConfig['jwtKey'];
  /** JWT_ISSUER; empty for any. */
  issuer: string;
  /** JWT_AUDIENCE; empty for any. */
  audience: string;
  /** JWT_MAX_AGE_SECONDS, in seconds. */
  maxAgeSeconds: number;
  /** Portal session tokens and revocations, or null when the API cannot mint them (none accepted). */
  portal: { tokens: PortalTokens; revoked(sessionId: string): Promise<boolean> } | null;
  /** Failed authentications per IP (ip-limits.ts). */
  authFailures: AuthFailureLimit;
}

export default fp<AuthOptions>(
  async (app, options) => {
    const { algorithm, key } = options.jwtKey;
    await app.register(jwt, {
      secret: algorithm === 'HS256' ? key : { public: key, private: '' },
      verify: {
        algorithms: [algorithm],
        requiredClaims: [
          'exp',
          'iat',
          ...(options.issuer === '' ? [] : ['iss']),
          ...(options.audience === '' ? [] : ['aud']),
        ],
        clockTolerance: clockToleranceMs,
        // @fastify/jwt reads a number as seconds.
        maxAge: options.maxAgeSeconds,
        // Verified tokens (and refusals) are remembered by hash until they expire: one check per token.
        cache: verifiedTokenCacheSize,
        ...(options.issuer === '' ? {} : { allowedIss: options.issuer }),
        ...(options.audience === '' ? {} : { allowedAud: options.audience }),
      },
    });
    app.decorateRequest('accountId', '');
    const { portal } = options;
    const { authFailures } = options;
    /**
     * The account `request` acts for.
     * @throws HttpProblem 401 for a missing, malformed or invalid token; 403 for a portal token where refused
     */
    const authenticate = async (request: FastifyRequest): Promise<string> => {
      const header = request.headers.authorization;
      if (header === undefined || !/^Bearer\s+\S+$/i.test(header)) {
        throw new HttpProblem(
          401,
          'unauthorized',
          'Send the credential as "Authorization: Bearer <token>"',
          undefined,
          { 'www-authenticate': 'Bearer realm="webhooks"' },
        );
      }
      const token = header.replace(/^Bearer\s+/i, '');
      const portalSession = portal !== null && portal.tokens.claimsPortal(token);
      let payload: { sub?: unknown; jti?: string };
      try {
        // The plugin's verifier on the token read above: `request.jwtVerify()` would decode before the cache.
        payload = portalSession ? portal.tokens.verify(token) : app.jwt.verify<{ sub?: unknown }>(token);
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        throw unauthorized(verifyFailures[code] ?? 'The token is not valid');
      }
      if (portalSession && (await portal.revoked(payload.jti!))) {
        throw unauthorized('The portal session was revoked');
      }
      if (!isValidAccountId(payload.sub)) {
        throw unauthorized('The token names no valid account (sub claim)');
      }
      if (portalSession && request.routeOptions.config.portalRefused) {
        throw new HttpProblem(
          403,
          'forbidden',
          'A portal session token cannot call this route; use a token of the account',
        );
      }
      return payload.sub;
    };
    app.addHook('onRequest', async (request) => {
      await authFailures.check(request.ip);
      try {
        request.accountId = await authenticate(request);
      } catch (error) {
        if (error instanceof HttpProblem && error.status === 401) await authFailures.failed(request.ip);
        throw error;
      }
    });
  },
  { name: 'auth' },
);
