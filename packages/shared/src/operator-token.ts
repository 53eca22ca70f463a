/**
 * The check of an operator token (METRICS_TOKEN, ADMIN_TOKEN) on `/metrics` and `/admin/queues`: a
 * bearer token (RFC 6750) or an HTTP Basic password (RFC 7617) so a browser can prompt. Never a JWT.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError, isDevelopmentEnv } from './config.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Compares in constant time whatever the lengths, so the answer time says nothing of the token. */
function sameSecret(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
}

/** Whether `header` (`Authorization`) carries `token` (never empty: an empty one is the caller's case). */
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
 * Refuses a production start with `/metrics` open (queue, route and volume names are reconnaissance).
 * @throws ConfigError naming METRICS_TOKEN when empty outside development and test, or the token
 *   shorter than {@link minOperatorTokenLength}
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

/** Fewest characters of operator tokens in production: 32 hex digits, 128 bits. */
export const minOperatorTokenLength = 32;
