/**
 * Sharded queues (QUEUE_SHARDS): event and delivery queues split into N shards under hash tags of
 * their own, so a Cluster spreads them over its masters. An account's fan-out and counts go to its
 * shard ({@link QueueShards.ofAccount}), a delivery and its gate to its subscription's.
 */
import { createHash } from 'node:crypto';
import clusterKeySlot from 'cluster-key-slot';
import { ConfigError } from './config-error.js';

/** Hash slots of a Redis Cluster (Redis Cluster specification, "Key distribution model"). */
export const hashSlots = 16_384;

/** The Redis Cluster hash slot of `key`, 0–16383: CRC16 of its hash tag, or of the whole key. */
export function keySlot(key: string): number {
  return clusterKeySlot(key);
}

/** The shards of a deployment and where an account's or a subscription's keys go. */
export interface QueueShards {
  /** QUEUE_SHARDS: how many there are, at least 1. */
  count: number;
  /** Key prefix of each shard, by shard number (`{webhooks:3}`); with one shard, the service's. */
  prefixes: readonly string[];
  /** The shard of an account: its fan-outs, rate-limit counts, idempotency keys and quotas. */
  ofAccount(accountId: string): number;
  /** The shard of a subscription: its deliveries, their retries, and its delivery gate. */
  ofSubscription(subscriptionId: string): number;
  accountPrefix(accountId: string): string;
  subscriptionPrefix(subscriptionId: string): string;
  /** `items` grouped by their subscription's shard, in order: only the shards that got some. */
  bySubscription<T extends { subscriptionId: string }>(items: readonly T[]): Map<number, T[]>;
}

/** A shard in [0, count) for `id` (first 32 bits of its SHA-1), the same in every process and release. */
export function stableShard(id: string, count: number): number {
  if (count === 1) return 0;
  return createHash('sha1').update(id).digest().readUInt32BE(0) % count;
}

/**
 * Shard `shard`'s hash tag under `base`: `base:shard`, or `base:shard.j` for the smallest `j` whose CRC16
 * slot lies in the shard's even share of the slots, so N shards fall evenly over a cluster's masters.
 */
export function shardTag(base: string, shard: number, count: number): string {
  const from = Math.floor((shard * hashSlots) / count);
  const to = Math.floor(((shard + 1) * hashSlots) / count);
  const inShare = (tag: string) => {
    const slot = keySlot(tag);
    return slot >= from && slot < to;
  };
  if (inShare(`${base}:${shard}`)) return `${base}:${shard}`;
  for (let j = 0; ; j++) if (inShare(`${base}:${shard}.${j}`)) return `${base}:${shard}.${j}`;
}

/**
 * The shards of QUEUE_SHARDS `count` under QUEUE_PREFIX `base`; `keyPrefix` is the effective one.
 * @throws ConfigError when `count` > 1 and `base` holds a hash tag of its own
 */
export function createQueueShards(base: string, keyPrefix: string, count: number): QueueShards {
  if (count > 1 && /[{}]/.test(base)) {
    throw new ConfigError(
      `Invalid environment variables QUEUE_PREFIX and QUEUE_SHARDS: with QUEUE_SHARDS > 1, QUEUE_PREFIX must not hold braces (${JSON.stringify(base)}); each shard gets its own hash tag`,
    );
  }
  const prefixes =
    count === 1
      ? [keyPrefix]
      : Array.from({ length: count }, (_, shard) => `{${shardTag(base, shard, count)}}`);
  const ofAccount = (accountId: string) => stableShard(`account:${accountId}`, count);
  const ofSubscription = (subscriptionId: string) => stableShard(subscriptionId, count);
  function bySubscription<T extends { subscriptionId: string }>(items: readonly T[]): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const item of items) {
      const shard = ofSubscription(item.subscriptionId);
      const group = groups.get(shard) ?? [];
      group.push(item);
      groups.set(shard, group);
    }
    return groups;
  }
  return {
    count,
    prefixes,
    ofAccount,
    ofSubscription,
    accountPrefix: (accountId) => prefixes[ofAccount(accountId)]!,
    subscriptionPrefix: (subscriptionId) => prefixes[ofSubscription(subscriptionId)]!,
    bySubscription,
  };
}

/**
 * WORKER_SHARDS (`0-3,6`; empty: all): the shard numbers, ascending, without repeats.
 * @throws ConfigError naming WORKER_SHARDS when an entry is not a number or a range `a-b`, a ≤ b < `count`
 */
export function parseShardList(value: string, count: number): number[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return Array.from({ length: count }, (_, shard) => shard);
  const shards = new Set<number>();
  for (const entry of entries) {
    const match = /^(\d{1,4})(?:-(\d{1,4}))?$/.exec(entry);
    const from = Number(match?.[1]);
    const to = match?.[2] === undefined ? from : Number(match[2]);
    if (!match || to < from || to >= count) {
      throw new ConfigError(
        `Invalid environment variable WORKER_SHARDS: ${JSON.stringify(entry)} is not a shard number or a range such as 0-3 below QUEUE_SHARDS (${count})`,
      );
    }
    for (let shard = from; shard <= to; shard++) shards.add(shard);
  }
  return [...shards].sort((a, b) => a - b);
}
