/**
 * Redis connections on one node (REDIS_URL), behind Sentinel (REDIS_SENTINELS) or on a Cluster
 * (REDIS_CLUSTER_NODES), as BullMQ's "going to production" guide asks: workers retry forever, so a
 * failover pauses them; producers fail fast, so a caller learns at once an event was not accepted.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ClosableCluster } from './closable-cluster.js';
import Type, { type Static } from 'typebox';
import { ConfigError } from './config-error.js';
import { splitList } from './env-list.js';
import { createQueueShards, type QueueShards } from './queue-shards.js';

/** A connection of any topology; both classes carry the same commands, scripts and pipelines. */
export type RedisConnection = Redis | Cluster;

export interface RedisNode {
  host: string;
  port: number;
}

/** Where Redis is: exactly one of the three forms. */
export type RedisTopology =
  | { mode: 'single'; url: string }
  | {
      mode: 'sentinel';
      sentinels: RedisNode[];
      /** The master's name in the sentinels' configuration. */
      name: string;
      /** Password and TLS of the data nodes, from REDIS_URL (its host and port are not used). */
      url: string;
    }
  | { mode: 'cluster'; nodes: RedisNode[]; url: string };

/** Redis variables both services read (docs/configuration.md, and "Deployment" in docs/operations.md). */
export const redisEnv = {
  REDIS_URL: Type.String({
    default: 'redis://127.0.0.1:6379',
    description:
      'Redis connection URL; with REDIS_SENTINELS or REDIS_CLUSTER_NODES only its password, username and `rediss:` (TLS) are used',
  }),
  REDIS_SENTINELS: Type.String({
    default: '',
    description: 'Comma-separated `host:port` of Redis Sentinels; when set, Redis is found through them',
  }),
  REDIS_SENTINEL_NAME: Type.String({
    default: 'mymaster',
    description: 'Name of the master the sentinels watch (with REDIS_SENTINELS)',
  }),
  REDIS_CLUSTER_NODES: Type.String({
    default: '',
    description:
      'Comma-separated `host:port` of Redis Cluster nodes (some suffice); when set, Redis is a cluster and the queue prefix gets a hash tag',
  }),
  REDIS_WAIT_REPLICAS: Type.Integer({
    default: 0,
    minimum: 0,
    description:
      'Replicas that must hold an event before it is accepted (Redis `WAIT`); 1 with Sentinel keeps accepted events through a failover',
  }),
};

/** The validated values of {@link redisEnv}. */
export type RedisEnv = { [K in keyof typeof redisEnv]: Static<(typeof redisEnv)[K]> };

/** Parses a `host:port,host:port` list. @throws ConfigError naming `variable`. */
function parseRedisNodes(variable: string, value: string): RedisNode[] {
  return splitList(value).map((entry) => {
    const match = /^(.+):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) {
      throw new ConfigError(
        `Invalid environment variable ${variable}: ${JSON.stringify(entry)} is not host:port (comma-separated list)`,
      );
    }
    return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
  });
}

/**
 * The topology of {@link redisEnv}'s variables.
 * @throws ConfigError when both REDIS_SENTINELS and REDIS_CLUSTER_NODES are set, or an entry is not host:port
 */
export function redisTopologyFromEnv(config: RedisEnv): RedisTopology {
  const sentinels = parseRedisNodes('REDIS_SENTINELS', config.REDIS_SENTINELS);
  const nodes = parseRedisNodes('REDIS_CLUSTER_NODES', config.REDIS_CLUSTER_NODES);
  if (sentinels.length > 0 && nodes.length > 0) {
    throw new ConfigError(
      'Invalid environment variables REDIS_SENTINELS and REDIS_CLUSTER_NODES: set one of them, not both',
    );
  }
  if (sentinels.length > 0) {
    return { mode: 'sentinel', sentinels, name: config.REDIS_SENTINEL_NAME, url: config.REDIS_URL };
  }
  if (nodes.length > 0) {
    return { mode: 'cluster', nodes, url: config.REDIS_URL };
  }
  return { mode: 'single', url: config.REDIS_URL };
}

/** The key prefix, a hash tag on a Cluster so that a script's keys share a slot (BullMQ, "Redis Cluster"). */
export function effectiveKeyPrefix(topology: RedisTopology | RedisConnection, prefix: string): string {
  const cluster = isRedisTopology(topology) ? topology.mode === 'cluster' : topology.isCluster;
  return cluster && !prefix.includes('{') ? `{${prefix}}` : prefix;
}

/** Whether `value` is a topology: by shape, so another copy of ioredis' connection is recognised too. */
export function isRedisTopology(value: RedisTopology | RedisConnection): value is RedisTopology {
  return !('isCluster' in value) && typeof (value as { url?: unknown }).url === 'string';
}

/** User name, password and TLS (`rediss:`) of a URL, for the nodes behind sentinels or of a cluster. */
function credentials(url: string): RedisOptions {
  const parsed = new URL(url);
  return {
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
  };
}

function connect(topology: RedisTopology | string, options: RedisOptions, cluster: ClusterOptions) {
  const where: RedisTopology = typeof topology === 'string' ? { mode: 'single', url: topology } : topology;
  switch (where.mode) {
    case 'single':
      return new Redis(where.url, options);
    case 'sentinel':
      return new Redis({
        ...credentials(where.url),
        ...options,
        sentinels: where.sentinels,
        name: where.name,
        // Reconnects to the new master as soon as the sentinels announce it, not on the next error.
        failoverDetector: true,
      });
    case 'cluster':
      return new ClosableCluster(where.nodes, {
        ...cluster,
        redisOptions: { ...credentials(where.url), ...options },
      });
  }
}

/**
 * A connection for BullMQ workers and queue events: commands wait for Redis to come back.
 * `connectionName` (CLIENT SETNAME) tells it apart in `CLIENT LIST`.
 */
export function createWorkerConnection(
  topology: RedisTopology | string,
  connectionName?: string,
): RedisConnection {
  return connect(
    topology,
    { maxRetriesPerRequest: null, ...(connectionName === undefined ? {} : { connectionName }) },
    {},
  );
}

/**
 * A connection for producers (the publisher, the API): commands fail at once while Redis is away.
 * Without auto-pipelining: ioredis 5 throws an uncaught `TypeError: results[i] is not iterable` when
 * a script command is sent before ready with the offline queue off (redis/ioredis#1931, #1511).
 */
export function createProducerConnection(topology: RedisTopology | string): RedisConnection {
  return connect(
    topology,
    { maxRetriesPerRequest: 1, enableOfflineQueue: false },
    // A cluster refuses commands until it has its slot map; the offline queue only holds them that
    // long, and each caller bounds its own wait (withRedisTimeout).
    { enableOfflineQueue: true },
  );
}

/**
 * A connection for many small independent commands (the API's rate limit): one event-loop turn's
 * commands go as one write (auto-pipelining). Never for BullMQ, nor on a Cluster, where a batch's
 * `MOVED` answers fail every command without refreshing the slot map (redis/ioredis#2075). The
 * offline queue stays on ({@link createProducerConnection}): a command waits while Redis is away
 * and fails after `commandTimeoutMs` (ms) or one failed reconnection, never hangs.
 */
export function createPipelinedConnection(
  topology: RedisTopology | string,
  commandTimeoutMs: number,
): RedisConnection {
  const cluster = typeof topology !== 'string' && topology.mode === 'cluster';
  const options = {
    maxRetriesPerRequest: 1,
    enableAutoPipelining: !cluster,
    commandTimeout: commandTimeoutMs,
    // Nothing is lost by cutting the socket at close, and ioredis' default 2 s timer would keep a
    // closing process alive that long when Redis was away.
    disconnectTimeout: 100,
  };
  return connect(topology, options, { enableOfflineQueue: true });
}

/** The Redis side of a service's configuration: its topology, key prefix and queue shards. */
export interface RedisSettings {
  redis: RedisTopology;
  /** QUEUE_PREFIX as {@link effectiveKeyPrefix} makes it, for the keys that are not sharded. */
  keyPrefix: string;
  /** QUEUE_SHARDS: where an account's and a subscription's keys go. */
  shards: QueueShards;
}

/** {@link RedisSettings} from validated variables. @throws ConfigError as {@link redisTopologyFromEnv} does */
export function redisSettingsFromEnv(
  config: RedisEnv & { QUEUE_PREFIX: string; QUEUE_SHARDS: number },
): RedisSettings {
  const redis = redisTopologyFromEnv(config);
  const keyPrefix = effectiveKeyPrefix(redis, config.QUEUE_PREFIX);
  return { redis, keyPrefix, shards: createQueueShards(config.QUEUE_PREFIX, keyPrefix, config.QUEUE_SHARDS) };
}

/** ioredis states of a lost or never-reached Redis (`connecting` waits in the offline queue). */
const downStates = new Set(['reconnecting', 'close', 'end']);

/** Whether `connection` is known to be without Redis now (see ioredis' `status`). */
export function redisConnectionDown(connection: RedisConnection): boolean {
  return downStates.has(connection.status);
}
