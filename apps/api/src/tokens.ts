/**
 * Minting HS256 bearer tokens the API accepts, the one helper behind `pnpm token`, the demo, the
 * benchmarks and the tests. Every token carries `sub` (the account) and `exp` (a token
 * without `exp` is refused); `iss` and `aud` are added when given, as JWT_ISSUER / JWT_AUDIENCE
 * require. Production tokens come from the platform's identity provider, not from here.
 */
import { createSigner } from 'fast-jwt';

/** Options of {@link createTokenMinter}. */
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

/**
 * A function minting a token for `account`. `claims` are merged into the payload; an explicit
 * `exp` (unix seconds) replaces the lifetime, `exp: undefined` leaves it out (for tests of refusals).
 */
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

/**
 * The minter of tokens an API configured with `config` accepts: its JWT_SECRET, and JWT_ISSUER and
 * JWT_AUDIENCE when set, each token living `ttlMs` ms. Null when the API verifies an identity
 * provider's key (JWT_PUBLIC_KEY), whose tokens cannot be minted here.
 */
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
