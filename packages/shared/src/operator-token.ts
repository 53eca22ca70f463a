/**
 * The check of an operator token (METRICS_TOKEN, ADMIN_TOKEN): the operator surfaces of both
 * services (`/metrics`, `/admin/queues`) accept it as a bearer token (RFC 6750) or, so that a
 * browser can prompt for it, as the password of HTTP Basic authentication (RFC 7617, any user
 * name). Client JWTs never open them: they are a different secret.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError, isDevelopmentEnv } from './config.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Compares in constant time whatever the lengths, so the answer time says nothing of the token. */
function sameSecret(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * Whether an `Authorization` header value carries `token`.
 *
 * @param header the request's `Authorization` header, if any
 * @param token the configured token; never empty (an empty token means the surface is off or open,
 *   which the caller decides)
 */
export function operatorTokenAccepted(header: string | undefined, token: string): boolean {
  if (header === undefined) return false;
  const [scheme = '', credentials = ''] = header.trim().split(/\s+/, 2);
  if (scheme.toLowerCase() === 'bearer') return sameSecret(credentials, token);
  if (scheme.toLowerCase() === 'basic') {
    const decoded = Buffer.from(credentials, 'base64').toString();
    return sameSecret(decoded.slice(decoded.indexOf(':') + 1), token);
  }
  return false;
}

/**
 * Refuses a production start with `/metrics` open: metrics name queues, routes and volumes, which
 * is reconnaissance for anyone who can reach the port.
 *
 * @throws ConfigError naming METRICS_TOKEN when it is empty outside NODE_ENV development and test,
 *   or the token (METRICS_TOKEN, or ADMIN_TOKEN when set) shorter than {@link minOperatorTokenLength}
 */
export function requireMetricsToken(config: {
  NODE_ENV: string;
  METRICS_TOKEN: string;
  ADMIN_TOKEN?: string;
}): void {
  if (isDevelopmentEnv(config.NODE_ENV)) return;
  if (config.METRICS_TOKEN === '') {
    throw new ConfigError(
      `Missing environment variable METRICS_TOKEN: required when NODE_ENV is ${JSON.stringify(config.NODE_ENV)} (only development and test may serve /metrics without a token)`,
    );
  }
  for (const name of ['METRICS_TOKEN', 'ADMIN_TOKEN'] as const) {
    const token = config[name] ?? '';
    if (token !== '' && token.length < minOperatorTokenLength) {
      throw new ConfigError(
        `Weak environment variable ${name}: ${token.length} characters; outside development and test it needs at least ${minOperatorTokenLength} (openssl rand -hex 16 gives 32)`,
      );
    }
  }
}

/**
 * Fewest characters of METRICS_TOKEN and ADMIN_TOKEN in production: 32 hex digits are 128 bits,
 * out of reach of guessing even without the per-address limits.
 */
export const minOperatorTokenLength = 32;
