/**
 * Where sharded queues put an account's and a subscription's keys (QUEUE_SHARDS), and which
 * shards a worker consumes (WORKER_SHARDS).
 */
import { describe, expect, it } from '@jest/globals';
import { ConfigError, createQueueShards, hashSlots, keySlot, parseShardList } from '../src/index.js';

/** The master of `slot` when three masters split the slots evenly, as `redis-cli --cluster create` does. */
const masterOf = (slot: number) => Math.floor((slot * 3) / hashSlots);

describe('queue shards', () => {
  it('keeps every key under the service prefix with one shard, as before sharding', () => {
    const shards = createQueueShards('webhooks', '{webhooks}', 1);
    expect(shards.prefixes).toEqual(['{webhooks}']);
    expect(shards.accountPrefix('acct-1')).toBe('{webhooks}');
    expect(shards.subscriptionPrefix('0193a0b2-0000-7000-8000-000000000001')).toBe('{webhooks}');
  });

  it.each([3, 6, 9, 12])('spreads %i shards evenly over three masters', (count) => {
    const { prefixes } = createQueueShards('webhooks', '{webhooks}', count);
    expect(new Set(prefixes).size).toBe(count);
    const perMaster = [0, 0, 0];
    for (const prefix of prefixes) {
      expect(prefix).toMatch(/^\{webhooks:\d+(\.\d+)?\}$/);
      perMaster[masterOf(keySlot(prefix))]! += 1;
    }
    expect(perMaster).toEqual([count / 3, count / 3, count / 3]);
  });

  it('maps an id to the same shard every time, and spreads many ids over all shards', () => {
    const shards = createQueueShards('webhooks', '{webhooks}', 6);
    const counts = Array.from({ length: 6 }, () => 0);
    for (let i = 0; i < 6_000; i++) {
      const id = `0193a0b2-0000-7000-8000-${String(i).padStart(12, '0')}`;
      expect(shards.ofSubscription(id)).toBe(shards.ofSubscription(id));
      counts[shards.ofSubscription(id)]! += 1;
    }
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(createQueueShards('webhooks', '{webhooks}', 6).ofAccount('acct-7')).toBe(
      shards.ofAccount('acct-7'),
    );
  });

  it('groups work by the shard of its subscription, keeping each group in order', () => {
    const shards = createQueueShards('webhooks', '{webhooks}', 6);
    const items = Array.from({ length: 60 }, (_, i) => ({
      subscriptionId: `0193a0b2-0000-7000-8000-${String(i % 12).padStart(12, '0')}`,
      n: i,
    }));
    const groups = shards.bySubscription(items);
    expect([...groups.values()].flat()).toHaveLength(items.length);
    for (const [shard, group] of groups) {
      for (const item of group) expect(shards.ofSubscription(item.subscriptionId)).toBe(shard);
      expect(group.map((item) => item.n)).toEqual([...group.map((item) => item.n)].sort((a, b) => a - b));
    }
  });

  it('refuses a prefix with its own hash tag when there are several shards', () => {
    expect(() => createQueueShards('{mine}', '{mine}', 4)).toThrow(ConfigError);
    expect(() => createQueueShards('{mine}', '{mine}', 4)).toThrow(/QUEUE_PREFIX/);
  });

  it('reads WORKER_SHARDS as numbers and ranges, every shard when empty', () => {
    expect(parseShardList('', 4)).toEqual([0, 1, 2, 3]);
    expect(parseShardList('0-1, 3', 4)).toEqual([0, 1, 3]);
    expect(parseShardList('2,2', 4)).toEqual([2]);
  });

  it.each(['4', '3-1', 'one', '0-'])('refuses WORKER_SHARDS=%s with 4 shards, naming it', (value) => {
    expect(() => parseShardList(value, 4)).toThrow(/WORKER_SHARDS/);
  });
});
