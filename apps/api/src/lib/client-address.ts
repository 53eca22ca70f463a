/**
 * Who a client is, for the per-address limits, and whom to believe about it. Pure rules:
 * - TRUST_PROXY names the proxies in front as a hop count or their addresses, never `true`: with
 *   `true`, Fastify takes the left-most `X-Forwarded-For` address, which the client itself writes,
 *   so a client could escape the failed-authentication lockout or lock a victim's address out.
 * - An IPv6 client is counted by its /64, the block one subscriber line or host gets (RFC 6177,
 *   RFC 7421), so that rotating the interface half of its address buys no fresh limit.
 */
import ipaddr from 'ipaddr.js';
import { ConfigError } from '@webhooks/shared';

/** Fastify's `trustProxy`: none, a function of (address, hop), or the trusted addresses. */
export type TrustProxy = false | ((address: string, hop: number) => boolean) | string[];

/**
 * TRUST_PROXY as Fastify's `trustProxy` takes it: `false` (no proxy; the default), a hop count
 * (the number of proxies in front: `X-Forwarded-For` is read from the right, that many entries),
 * or the proxies' addresses and CIDR ranges.
 *
 * @throws ConfigError naming TRUST_PROXY for `true`, a count below 1, or an entry that is not an
 *   IP address or CIDR range
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

/**
 * The key an address is counted under by the per-address limits: an IPv4 address itself (an
 * IPv4-mapped IPv6 address as its IPv4 form), an IPv6 address as its /64 (`2001:db8:1:2::/64`).
 * Anything unparsable is its own key.
 */
export function clientAddressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}
