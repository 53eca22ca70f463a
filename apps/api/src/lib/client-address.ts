/**
 * Who a client is, for per-address limits. TRUST_PROXY is a hop count or addresses, never `true`
 * (Fastify would trust the left-most `X-Forwarded-For`, which the client writes). IPv6 counts by
 * its /64 (RFC 6177, RFC 7421), so rotating the interface half buys no fresh limit.
 */
import ipaddr from 'ipaddr.js';
import { ConfigError } from '@webhooks/shared';

/** Fastify's `trustProxy`: none, a function of (address, hop), or the trusted addresses. */
export type TrustProxy = false | ((address: string, hop: number) => boolean) | string[];

/**
 * TRUST_PROXY as Fastify's `trustProxy`: `false` (default), a hop count (`X-Forwarded-For` read
 * that many from the right), or the proxies' addresses and CIDRs.
 * @throws ConfigError naming TRUST_PROXY for `true`, a count below 1, or an entry not an IP or CIDR
 */
export function parseTrustProxy(value: string): TrustProxy {
  const text = value.trim();
  if (text === '' || text === 'false') return false;
  if (text === 'true') {
    throw new ConfigError(
      'Unsafe environment variable TRUST_PROXY: `true` believes the left-most X-Forwarded-For address, which any client writes; give the number of proxies in front (such as 1) or their addresses (such as 10.0.0.0/8)',
    );
  }
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1) throw new ConfigError('Invalid environment variable TRUST_PROXY: a hop count is 1 or more');
    // proxy-addr's rule, as Fastify applies a number: the socket's address is hop 0.
    return (_address: string, hop: number) => hop < hops;
  }
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const valid = entry.includes('/') ? isCidr(entry) : ipaddr.isValid(entry);
    if (!valid) {
      throw new ConfigError(
        `Invalid environment variable TRUST_PROXY: ${JSON.stringify(entry)} is neither an IP address nor a CIDR range (expected false, a hop count, or addresses and ranges, comma-separated)`,
      );
    }
  }
  return entries;
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}

/** An address's key for the limits: IPv4 itself (mapped IPv6 as IPv4), IPv6 as its /64; unparsable as is. */
export function clientAddressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}
