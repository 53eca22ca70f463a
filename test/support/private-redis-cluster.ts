/**
 * A Redis Cluster of a test's own: three masters on free ports in a temporary folder, joined with
 * `redis-cli --cluster create`, for the tests that run the service on a cluster. The
 * machine's shared server is never touched.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/lib/services.js';
import { pingRedis, spawnRedisServer } from './private-redis.js';
import { waitFor } from './wait.js';

/** A running private cluster. */
export interface PrivateRedisCluster {
  /** `host:port` of every master, comma-separated: a REDIS_CLUSTER_NODES value. */
  nodes: string;
  /** Stops every node and removes the folder. */
  destroy(): Promise<void>;
}

/** Whether every node reports `cluster_state:ok`, so each slot has a master answering. */
async function clusterReady(ports: number[]): Promise<boolean> {
  const states = await Promise.all(
    ports.map(async (port) => {
      const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 });
      client.on('error', () => {});
      try {
        return (await client.cluster('INFO')).includes('cluster_state:ok');
      } finally {
        client.disconnect();
      }
    }),
  );
  return states.every(Boolean);
}

/** Starts three `--cluster-enabled yes` servers and joins them into one cluster. */
export async function startPrivateRedisCluster(): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-redis-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    ports.push(port);
    children.push(
      spawnRedisServer(port, dir, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--dbfilename',
        `dump-${port}.rdb`,
        '--appendonly',
        'no',
      ]),
    );
  }
  const exited = children.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  const destroy = async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(exited);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await waitFor(`cluster node ${port} to answer`, () => pingRedis(port));
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    await promisify(execFile)('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-yes']);
    await waitFor('the cluster to cover every slot', () => clusterReady(ports));
    return { nodes: addresses.join(','), destroy };
  } catch (error) {
    await destroy();
    throw error;
  }
}
