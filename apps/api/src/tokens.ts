/**
 * Minting HS256 bearer tokens the API accepts, for `pnpm token`, the demo, benchmarks and tests:
 * `sub`, `exp`, and `iss`/`aud` when given. Production tokens come from the platform's identity provider.
 */
import { createSigner } from 'fast-jwt';

export interface TokenMinterOptions {
  /** The HS256 secret: JWT_SECRET of the API that will verify the tokens. */
  secret: string;
  /** Lifetime of each token in ms (default one hour). */
  ttlMs?: number | undefined;
  /** `iss` claim, for an API with JWT_ISSUER set. */
  issuer?: string | undefined;
  /** `aud` claim, for an API with JWT_AUDIENCE set. */
  audience?: string | undefined;
}

/** Mints a token for `account`, `claims` merged; an explicit `exp` (unix s) replaces the lifetime, `undefined` drops it. */
export function createTokenMinter(
  options: TokenMinterOptions,
): (account: string, claims?: Record<string, unknown>) => string {
  const ttlMs = options.ttlMs ?? 3_600_000;
  const sign = createSigner({ key: options.secret, algorithm: 'HS256' });
  return (account, claims = {}) =>
    sign({
      sub: account,
      exp: Math.floor((Date.now() + ttlMs) / 1000),
      ...(options.issuer === undefined ? {} : { iss: options.issuer }),
      ...(options.audience === undefined ? {} : { aud: options.audience }),
      ...claims,
    });
}

/** The minter for an API configured with `config` (tokens living `ttlMs`); null under JWT_PUBLIC_KEY. */
export function configuredTokenMinter(
  config: { jwtKey: { algorithm: string; key: string }; JWT_ISSUER: string; JWT_AUDIENCE: string },
  ttlMs: number,
): ReturnType<typeof createTokenMinter> | null {
  if (config.jwtKey.algorithm !== 'HS256') return null;
  return createTokenMinter({
    secret: config.jwtKey.key,
    ttlMs,
    issuer: config.JWT_ISSUER === '' ? undefined : config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE === '' ? undefined : config.JWT_AUDIENCE,
  });
}
