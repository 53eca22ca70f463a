/**
 * The cap per destination host: at most HOST_MAX_IN_FLIGHT attempts in flight to one callback host,
 * across all subscriptions, accounts and workers, so that the service cannot be turned into a
 * flood on a third party however many subscriptions point at it. The cap counts a host by its
 * registrable domain ({@link hostCapKey}: ports, paths, letter case, a trailing dot and wildcard
 * subdomains of one domain share it), or by its address for an IP literal. An attempt over the cap waits in BullMQ's delayed set
 * without using an attempt, and asks again after {@link hostWaitMs}.
 *
 * Accounts share a host's slots fairly: while other accounts wait for one, an account takes no
 * more than its share of the cap (`acquireLua`), so one account pointing many subscriptions at a
 * shared host (`hooks.slack.com`) cannot keep every other account's deliveries off it.
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
 * How long an account that asked for a host's slot and was refused counts as sharing the host, in
 * ms: several of its waits ({@link hostWaitMs}), so that an account whose deliveries keep asking
 * keeps its share, and one that stopped asking gives it back within a second.
 */
const askedMemoryMs = 1_000;

/**
 * KEYS: leases (`<account>\t<job id>` → lease end ms), counts (account → slots held), asking
 * (account → when it was last refused, ms). ARGV: the member, lease ms, cap, account, asked memory
 * ms. Returns 1 and takes a slot, else 0.
 *
 * Max-min fairness between the accounts sharing the host: each has a share of the cap, the cap
 * over the accounts holding slots or refused lately (at least 1). An account under its share takes
 * a free slot; one at or over it takes a free slot only while no other account is waiting for one,
 * so that the host's slots are used whoever asks, and a flood that holds them all gives them up to
 * a newcomer as its attempts end. Expired leases (their holder died) are cleared only at the cap,
 * where they change the answer.
 */
const acquireLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local member, lease, cap, account, memory = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local held = redis.call('ZCARD', KEYS[1])
if held >= cap then
  if redis.call('ZSCORE', KEYS[1], member) then
    redis.call('ZADD', KEYS[1], now + lease, member)
    return 1
  end
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  for _, gone in ipairs(expired) do
    local owner = string.sub(gone, 1, string.find(gone, '\t', 1, true) - 1)
    if redis.call('HINCRBY', KEYS[2], owner, -1) <= 0 then redis.call('HDEL', KEYS[2], owner) end
    redis.call('ZREM', KEYS[1], gone)
  end
  held = held - #expired
end
-- Shares matter only while another account waits: the usual admission reads one more key.
local othersAsking = false
local sharing = 0
local anyAsking = redis.call('ZCARD', KEYS[3]) > 0
if anyAsking then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - memory)
  for _, asker in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    if asker ~= account then
      othersAsking = true
      if redis.call('HEXISTS', KEYS[2], asker) == 0 then sharing = sharing + 1 end
    end
  end
end
local admitted = held < cap
if admitted and othersAsking then
  local mine = tonumber(redis.call('HGET', KEYS[2], account) or '0')
  sharing = sharing + redis.call('HLEN', KEYS[2]) + (mine == 0 and 1 or 0)
  admitted = mine < math.max(1, math.floor(cap / sharing))
end
if admitted then
  redis.call('ZADD', KEYS[1], now + lease, member)
  redis.call('HINCRBY', KEYS[2], account, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('PEXPIRE', KEYS[2], lease)
  if anyAsking then redis.call('ZREM', KEYS[3], account) end
  return 1
end
redis.call('ZADD', KEYS[3], now, account)
redis.call('PEXPIRE', KEYS[3], memory)
return 0`;

/** KEYS: leases, counts. ARGV: the member, its account. Gives the member's slot back, once. */
const releaseLua = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  if redis.call('HINCRBY', KEYS[2], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[2]) end
end
return 0`;

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
   * Takes a slot of `hostname` for `accountId`'s delivery, within the account's share of the host
   * while other accounts wait for one (`acquireLua`).
   *
   * @returns 0 when taken, else the ms to wait before asking again
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(hostname: string, accountId: string, jobId: string): Promise<number>;
  /** Gives the slot back. Never throws: when Redis fails, the lease expires on its own. */
  release(hostname: string, accountId: string, jobId: string): Promise<void>;
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

/** The Redis keys of a host's slots: the leases, the slots each account holds, the accounts refused lately. */
export function hostCapKeys(prefix: string, hostname: string) {
  const host = `${prefix}:host:${hostCapKey(hostname)}`;
  return { leases: `${host}:leases`, counts: `${host}:accounts`, asking: `${host}:asking` };
}

/** Creates the host cap on `options.redis` (registering its scripts there). */
export function createHostGate(options: HostGateOptions): HostGate {
  const { redis, prefix, maxInFlight, leaseMs, log } = options;
  redis.defineCommand('webhookHostAcquire', { numberOfKeys: 3, lua: acquireLua });
  redis.defineCommand('webhookHostRelease', { numberOfKeys: 2, lua: releaseLua });
  const commands = redis as unknown as {
    webhookHostAcquire(...args: Array<string | number>): Promise<number>;
    webhookHostRelease(...args: string[]): Promise<number>;
  };
  return {
    async acquire(hostname, accountId, jobId) {
      const keys = hostCapKeys(prefix, hostname);
      const taken = await commands.webhookHostAcquire(
        keys.leases,
        keys.counts,
        keys.asking,
        `${accountId}\t${jobId}`,
        leaseMs,
        maxInFlight,
        accountId,
        askedMemoryMs,
      );
      return taken === 1 ? 0 : hostWaitMs(Math.random());
    },
    async release(hostname, accountId, jobId) {
      const keys = hostCapKeys(prefix, hostname);
      try {
        await commands.webhookHostRelease(keys.leases, keys.counts, `${accountId}\t${jobId}`, accountId);
      } catch (error) {
        log.warn({ err: error, hostname }, 'host slot release failed; its lease will expire');
      }
    },
  };
}
