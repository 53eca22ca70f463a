import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import {
  ConfigError,
  effectiveKeyPrefix,
  isRedisTopology,
  redisSettingsOfEnv,
  redisTopologyFromEnv,
} from '../src/index.js';

const env = {
  REDIS_URL: 'redis://:pw@127.0.0.1:6379',
  REDIS_SENTINELS: '',
  REDIS_SENTINEL_NAME: 'mymaster',
  REDIS_CLUSTER_NODES: '',
  REDIS_WAIT_REPLICAS: 0,
};

describe('Redis topology from the environment', () => {
  it('is one node by REDIS_URL unless a list is set', () => {
    expect(redisTopologyFromEnv(env)).toEqual({ mode: 'single', url: env.REDIS_URL });
  });

  it('reads sentinels and cluster nodes as host:port lists, IPv6 in brackets', () => {
    expect(redisTopologyFromEnv({ ...env, REDIS_SENTINELS: 'a:26379, [::1]:26380' })).toMatchObject({
      mode: 'sentinel',
      name: 'mymaster',
      sentinels: [
        { host: 'a', port: 26379 },
        { host: '::1', port: 26380 },
      ],
    });
    expect(redisTopologyFromEnv({ ...env, REDIS_CLUSTER_NODES: 'r1:7000,r2:7001' })).toMatchObject({
      mode: 'cluster',
      nodes: [
        { host: 'r1', port: 7000 },
        { host: 'r2', port: 7001 },
      ],
    });
  });

  it.each([
    [{ REDIS_SENTINELS: 'a:1', REDIS_CLUSTER_NODES: 'b:2' }, /set one of them/],
    [{ REDIS_CLUSTER_NODES: 'r1' }, /REDIS_CLUSTER_NODES: "r1" is not host:port/],
    [{ REDIS_SENTINELS: 'a:99999' }, /REDIS_SENTINELS: "a:99999"/],
  ])('refuses %j naming the variable', (overrides, message) => {
    expect(() => redisTopologyFromEnv({ ...env, ...overrides })).toThrow(ConfigError);
    expect(() => redisTopologyFromEnv({ ...env, ...overrides })).toThrow(message);
  });

  it('takes REDIS_WAIT_REPLICAS on a cluster: WAIT goes to the master of the shard that took the event', () => {
    expect(
      redisTopologyFromEnv({ ...env, REDIS_CLUSTER_NODES: 'r1:7000', REDIS_WAIT_REPLICAS: 1 }).mode,
    ).toBe('cluster');
  });

  it('wraps the key prefix in a hash tag on a cluster only', () => {
    const cluster = redisTopologyFromEnv({ ...env, REDIS_CLUSTER_NODES: 'r1:7000' });
    expect(effectiveKeyPrefix(cluster, 'webhooks')).toBe('{webhooks}');
    expect(effectiveKeyPrefix(cluster, '{mine}')).toBe('{mine}');
    expect(effectiveKeyPrefix(redisTopologyFromEnv(env), 'webhooks')).toBe('webhooks');
  });

  it('tells a connection from a topology by shape, and reads a connection the same way', () => {
    const single = new Redis({ lazyConnect: true });
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    expect(isRedisTopology(single)).toBe(false);
    expect(isRedisTopology(cluster)).toBe(false);
    expect(isRedisTopology(redisTopologyFromEnv(env))).toBe(true);
    expect(effectiveKeyPrefix(cluster, 'webhooks')).toBe('{webhooks}');
    expect(effectiveKeyPrefix(single, 'webhooks')).toBe('webhooks');
  });

  it("reads a service's Redis settings from raw variables, with the defaults of those left out", () => {
    const cluster = redisSettingsOfEnv({
      REDIS_CLUSTER_NODES: 'r1:7000,r2:7001',
      QUEUE_SHARDS: '6',
      OTHER: 'x',
    });
    expect(cluster.redis).toMatchObject({
      mode: 'cluster',
      nodes: [
        { host: 'r1', port: 7000 },
        { host: 'r2', port: 7001 },
      ],
    });
    expect(cluster.keyPrefix).toBe('{webhooks}');
    expect(cluster.shards.count).toBe(6);
    expect(redisSettingsOfEnv({})).toMatchObject({ redis: { mode: 'single' }, keyPrefix: 'webhooks' });
    expect(() => redisSettingsOfEnv({ QUEUE_SHARDS: 'many' })).toThrow(ConfigError);
  });
});
