/**
 * The cap per destination host: at most HOST_MAX_IN_FLIGHT attempts in flight to one registrable domain
 * across subscriptions, accounts and workers, shared max-min fairly between accounts. Taken in the
 * admission when the host is known, else here; over the cap an attempt waits delayed, unspent.
 */
import type { Logger } from 'pino';
import { getDomain } from 'tldts';
import type { RedisConnection } from '@webhooks/shared';
import { defineGateScripts, noSlot } from './gate-scripts.js';

/** The longest wait over a host's cap (ms), 250–750 for spread; bounds a lost wake-up. `random` in [0, 1). */
export function hostWaitMs(random: number): number {
  return Math.round(250 + 500 * random);
}

/** How long a refused account counts as sharing a host (ms): a few waits, so it keeps its share while it asks. */
export const askedMemoryMs = 1_000;

/** A host slot's holder in the host's leases and waiting set: its account, a tab, its job id. */
export function hostMember(accountId: string, jobId: string): string {
  return `${accountId}\t${jobId}`;
}

/** What an attempt asks of its host: hostname (a broker's for broker destinations), account, `rate_limit` (/s). */
export interface HostAsk {
  hostname: string;
  accountId: string;
  rate?: number;
}

/** A host's slots per shard: HOST_MAX_IN_FLIGHT ÷ QUEUE_SHARDS (floor, ≥ 1), beside the gates for one script. */
export function hostCapPerShard(maxInFlight: number, shards: number): number {
  return Math.max(1, Math.floor(maxInFlight / shards));
}

/** The share of host-only admissions that refresh the leases key's TTL. */
const leasesRefreshShare = 1 / 16;

export interface HostGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** The queue shard's key prefix, which the host's keys go under ({@link hostCapKeys}). */
  prefix: string;
  /** A host's slots in the shard ({@link hostCapPerShard}). */
  maxInFlight: number;
  /** How long a slot is held at most, in ms: longer than the longest attempt. */
  leaseMs: number;
  /** Wakes job `jobId`, waiting for a slot just freed (promotes it); never throws. */
  wake: (jobId: string) => Promise<void>;
  log: Logger;
}

/** A host's share taken alone, outside an admission; `jobId` names the holder. */
export interface HostGate {
  /**
   * Takes a slot of `hostname` for `accountId` within its share; with `rate`, counts the attempt in
   * `rate_limit` (`perSecond` per `rateWindowMs`). @returns 0 when taken, else the ms to wait
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(
    hostname: string,
    accountId: string,
    jobId: string,
    rate?: { subscriptionId: string; perSecond: number },
  ): Promise<number>;
  /** Gives the slot back and wakes a waiter; never throws (the lease expires on its own). */
  release(hostname: string, accountId: string, jobId: string): Promise<void>;
}

/**
 * What the cap counts a host as: its registrable domain by the Public Suffix List, private section
 * included (tldts), so `a.victim.com` and `victim.com` share one while `x.herokuapp.com` and
 * `y.herokuapp.com` do not; an IP or a name without one is itself, lower-cased, no trailing dot.
 */
export function hostCapKey(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  return getDomain(host, { allowPrivateDomains: true }) ?? host;
}

/**
 * A host's keys in `prefix`'s shard (its hash tag first, so they share the gates' Cluster slot): leases,
 * accounts refused lately, waiters, and `subscriptionId`'s `rate_limit` window.
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
