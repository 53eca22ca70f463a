/**
 * The cap per destination host: at most HOST_MAX_IN_FLIGHT attempts in flight to one callback host,
 * across all subscriptions, accounts and workers, so that the service cannot be turned into a
 * flood on a third party however many subscriptions point at it. The cap counts a host by its
 * registrable domain ({@link hostCapKey}: ports, paths, letter case, a trailing dot and wildcard
 * subdomains of one domain share it), or by its address for an IP literal. An attempt over the cap waits in BullMQ's delayed set
 * without using an attempt, and asks again after {@link hostWaitMs}.
 *
 * Slots are leases in a Redis sorted set per host (`<prefix>:host:<name>:leases`, scored by lease
 * expiry in ms), taken and given back by one Lua script each, so a worker killed mid-attempt
 * cannot keep one past its lease.
 */
import type { Logger } from 'pino';
import { getDomain } from 'tldts';
import type { RedisConnection } from '@webhooks/shared';

/**
 * How long an attempt over its host's cap waits before asking again, in ms: 50 to 150, spread so
 * that the waiting attempts of many subscriptions do not all return at once.
 *
 * @param random a number in [0, 1) (Math.random)
 */
export function hostWaitMs(random: number): number {
  return Math.round(50 + 100 * random);
}

/**
 * KEYS: leases. ARGV: job id, lease ms, cap. Returns 1 and takes a slot when the host is under its
 * cap (or the job holds one already), else 0. Expired leases (their holder died) are cleared only
 * at the cap, where they change the answer: under it, an acquire costs four commands.
 */
const acquireLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= cap then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= cap then
    return 0
  end
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`;

/** Options of {@link createHostGate}. */
export interface HostGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** The effective queue key prefix. */
  prefix: string;
  /** HOST_MAX_IN_FLIGHT. */
  maxInFlight: number;
  /** How long a slot is held at most, in ms: longer than the longest attempt. */
  leaseMs: number;
  log: Logger;
}

/** The host cap's operations; `jobId` is the BullMQ job id of the delivery. */
export interface HostGate {
  /**
   * Takes a slot of `hostname`.
   *
   * @returns 0 when taken, else the ms to wait before asking again
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(hostname: string, jobId: string): Promise<number>;
  /** Gives the slot back. Never throws: when Redis fails, the lease expires on its own. */
  release(hostname: string, jobId: string): Promise<void>;
}

/**
 * What the cap counts a callback host as: its registrable domain by the Public Suffix List, its
 * private section included (tldts), so that `a.victim.com`, `B.victim.com.` and `victim.com` share
 * one cap while two apps under a hosting suffix (`x.herokuapp.com`, `y.herokuapp.com`) keep one
 * each; an IP literal or a name without a registrable domain counts as itself, lower-cased and
 * without a trailing dot.
 */
export function hostCapKey(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  return getDomain(host, { allowPrivateDomains: true }) ?? host;
}

/** The Redis key of a host's slots. */
export function hostLeasesKey(prefix: string, hostname: string): string {
  return `${prefix}:host:${hostCapKey(hostname)}:leases`;
}

/** Creates the host cap on `options.redis` (registering its script there). */
export function createHostGate(options: HostGateOptions): HostGate {
  const { redis, prefix, maxInFlight, leaseMs, log } = options;
  redis.defineCommand('webhookHostAcquire', { numberOfKeys: 1, lua: acquireLua });
  const acquire = (
    redis as unknown as { webhookHostAcquire(...args: Array<string | number>): Promise<number> }
  ).webhookHostAcquire;
  return {
    async acquire(hostname, jobId) {
      const taken = await acquire.call(redis, hostLeasesKey(prefix, hostname), jobId, leaseMs, maxInFlight);
      return taken === 1 ? 0 : hostWaitMs(Math.random());
    },
    async release(hostname, jobId) {
      try {
        await redis.zrem(hostLeasesKey(prefix, hostname), jobId);
      } catch (error) {
        log.warn({ err: error, hostname }, 'host slot release failed; its lease will expire');
      }
    },
  };
}
