/**
 * The cap per destination host: at most HOST_MAX_IN_FLIGHT attempts in flight to one callback host
 * (its registrable domain, {@link hostCapKey}) across all subscriptions, accounts and workers, so
 * the service cannot be turned into a flood on a third party. Accounts share a host's slots
 * max-min fairly while others wait for one. The share is taken in the delivery's admission
 * (`gate-scripts.ts`) when its host is known then, else here, alone ({@link createHostGate}). An
 * attempt over the cap waits in BullMQ's delayed set, using no attempt, until a freed slot wakes
 * it, or after {@link hostWaitMs} in case that wake-up was lost.
 */
import type { Logger } from 'pino';
import { getDomain } from 'tldts';
import type { RedisConnection } from '@webhooks/shared';
import { defineGateScripts, noSlot } from './gate-scripts.js';

/**
 * How long an attempt over its host's cap waits at most before asking again, in ms: 250 to 750,
 * spread so that the waiting attempts of many subscriptions do not all return at once. A freed slot
 * wakes a waiting attempt before that; this bounds what a lost wake-up (its job not yet delayed, a
 * worker gone) costs.
 *
 * @param random a number in [0, 1) (Math.random)
 */
export function hostWaitMs(random: number): number {
  return Math.round(250 + 500 * random);
}

/**
 * How long an account that asked for a host's slot and was refused counts as sharing the host, in
 * ms: several of its waits ({@link hostWaitMs}), so that an account whose deliveries keep asking
 * keeps its share, and one that stopped asking gives it back within a second.
 */
export const askedMemoryMs = 1_000;

/** A host slot's holder in the host's leases and waiting set: its account, a tab, its job id. */
export function hostMember(accountId: string, jobId: string): string {
  return `${accountId}\t${jobId}`;
}

/**
 * What an attempt asks of its callback's host: the hostname (counted as {@link hostCapKey} says;
 * a broker destination's is its broker's), the account whose share it counts in, and the
 * subscription's `rate_limit` (attempts a second) when it has one.
 */
export interface HostAsk {
  hostname: string;
  accountId: string;
  rate?: number;
}

/**
 * A host's slots in each queue shard: HOST_MAX_IN_FLIGHT split evenly over QUEUE_SHARDS, rounded
 * down, at least 1. A host's slots are kept in each subscription's shard, beside its gate, so that
 * one script admits both (Redis Cluster runs a script on one slot's keys); the split keeps the
 * host's total at most HOST_MAX_IN_FLIGHT across the shards.
 */
export function hostCapPerShard(maxInFlight: number, shards: number): number {
  return Math.max(1, Math.floor(maxInFlight / shards));
}

/** The share of host-only admissions that refresh the leases key's TTL. */
const leasesRefreshShare = 1 / 16;

/** Options of {@link createHostGate}. */
export interface HostGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** The queue shard's key prefix, which the host's keys go under ({@link hostCapKeys}). */
  prefix: string;
  /** A host's slots in the shard ({@link hostCapPerShard}). */
  maxInFlight: number;
  /** How long a slot is held at most, in ms: longer than the longest attempt. */
  leaseMs: number;
  /**
   * Wakes the attempt of job `jobId`, waiting for a slot that just freed (promotes its delayed
   * job). Never throws: a wake-up that finds nothing to wake is dropped.
   */
  wake: (jobId: string) => Promise<void>;
  log: Logger;
}

/** A host's share taken alone, outside an admission; `jobId` names the holder. */
export interface HostGate {
  /**
   * Takes a slot of `hostname` for `accountId`'s delivery, within the account's share of the host
   * while other accounts wait for one, and, with `rate`, counts the attempt in its subscription's
   * `rate_limit` (`perSecond` attempts in any `rateWindowMs`) in the same step: a full window
   * takes nothing.
   *
   * @returns 0 when taken, else the ms to wait before asking again
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(
    hostname: string,
    accountId: string,
    jobId: string,
    rate?: { subscriptionId: string; perSecond: number },
  ): Promise<number>;
  /**
   * Gives the slot back and wakes an attempt waiting for one. Never throws: when Redis fails, the
   * lease expires on its own.
   */
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

/**
 * The Redis keys of a host's slots in the shard of `prefix`: the leases (members name their
 * account, {@link hostMember}), the accounts refused lately, the attempts waiting to be woken, and
 * subscription `subscriptionId`'s `rate_limit` window (`rate`). The shard prefix's hash tag comes
 * first, so that they share the subscriptions' gates' slot on a Redis Cluster
 * (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags); the
 * host's own braces spread hosts over slots only where the prefix has none (a single Redis).
 */
export function hostCapKeys(prefix: string, hostname: string, subscriptionId = '') {
  const host = `${prefix}:host:{${hostCapKey(hostname)}}`;
  return {
    leases: `${host}:leases`,
    asking: `${host}:asking`,
    waiting: `${host}:waiting`,
    rate: `${host}:rate:${subscriptionId}`,
  };
}

/** Creates the host cap of one shard on `options.redis` (registering its scripts there). */
export function createHostGate(options: HostGateOptions): HostGate {
  const { redis, prefix, maxInFlight, leaseMs, wake, log } = options;
  const scripts = defineGateScripts(redis);
  return {
    async acquire(hostname, accountId, jobId, rate) {
      const { leases, asking, waiting, rate: sent } = hostCapKeys(prefix, hostname, rate?.subscriptionId);
      // The subscription's keys are not read; the host's leases stand in for them, in its slot.
      const unread = { leases, parked: leases, state: leases, claim: leases };
      const scheduler = { entries: leases, ring: leases, granted: leases, quota: leases };
      const [, , , , waitMs] = await scripts.acquire(
        { ...unread, ...scheduler, hostLeases: leases, hostAsking: asking, hostWaiting: waiting, sent },
        {
          ...noSlot.args,
          slot: '0',
          job: jobId,
          leaseMs,
          refreshTtl: Math.random() < leasesRefreshShare ? '1' : '0',
          hostMember: hostMember(accountId, jobId),
          hostAccount: accountId,
          hostCap: maxInFlight,
          askedMemoryMs,
          rate: rate?.perSecond ?? '',
        },
      );
      return waitMs === -1 ? hostWaitMs(Math.random()) : waitMs;
    },
    async release(hostname, accountId, jobId) {
      const { leases, waiting } = hostCapKeys(prefix, hostname);
      let woken = '';
      try {
        [, , , , , , woken] = await scripts.release(
          { leases, state: leases, parked: leases, claim: leases, hostLeases: leases, hostWaiting: waiting },
          {
            ...noSlot.releaseArgs,
            slot: '0',
            job: jobId,
            refreshTtl: '0',
            hostMember: hostMember(accountId, jobId),
          },
        );
      } catch (error) {
        log.warn({ err: error, hostname }, 'host slot release failed; its lease will expire');
      }
      if (woken !== '') await wake(woken.slice(woken.indexOf('\t') + 1));
    },
  };
}
