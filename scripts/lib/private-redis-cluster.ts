/**
 * A Redis Cluster of a test's or a benchmark's own: three masters on free ports in a temporary
 * folder, with a replica each when asked, joined with `redis-cli --cluster create`, for what runs
 * the service on a cluster. The machine's shared server is never touched.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './services.js';
import { pingRedis, spawnRedisServer } from './private-redis.js';
import { waitFor } from './wait.js';

/** A running private cluster. */
export interface PrivateRedisCluster {
  /** `host:port` of every node, comma-separated: a REDIS_CLUSTER_NODES value. */
  nodes: string;
  /** Ports of the nodes that are masters now, each with the slot ranges it serves. */
  masters(): Promise<Array<{ port: number; slots: Array<[number, number]> }>>;
  /** Kills the node on `port` with SIGKILL; with replicas, the cluster promotes the master's one. */
  kill(port: number): Promise<void>;
  /**
   * Starts a new node, joins it to the cluster and makes it a replica of the master on
   * `masterPort` (`CLUSTER MEET`, `CLUSTER REPLICATE`), as an operator repairs a master left
   * without one; resolves once the master reports it online. @returns its port
   */
  addReplica(masterPort: number): Promise<number>;
  /** Stops every node and removes the folder. */
  destroy(): Promise<void>;
}

/** Runs `command` on the node at `port` with a connection of its own, closed after. */
export async function onNode<T>(port: number, command: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 });
  node.on('error', () => {});
  try {
    return await command(node);
  } finally {
    node.disconnect();
  }
}

/**
 * Commands the node at `port` ran since its last `CONFIG RESETSTAT`, as `INFO commandstats` counts
 * them: the commands Lua scripts ran inside Redis included, besides the script calls.
 */
export async function commandsRun(port: number): Promise<number> {
  const stats = await onNode(port, (node) => node.info('commandstats'));
  return [...stats.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** Whether every node reports `cluster_state:ok`, so each slot has a master answering. */
async function clusterReady(ports: number[]): Promise<boolean> {
  const states = await Promise.all(ports.map((port) => onNode(port, (node) => node.cluster('INFO'))));
  return states.every((state) => state.includes('cluster_state:ok'));
}

/** Whether every master reports each of its replicas online (`INFO replication`). */
async function replicasInSync(ports: number[]): Promise<boolean> {
  const roles = await Promise.all(ports.map((port) => onNode(port, (node) => node.info('replication'))));
  const masters = roles.filter((info) => info.includes('role:master'));
  return masters.length === 3 && masters.every((info) => /slave0:.*state=online/.test(info));
}

/**
 * Starts three masters (and `replicas` replicas of each) as `--cluster-enabled yes` servers and
 * joins them into one cluster. A node that stops answering for `nodeTimeoutMs` (default 1 s,
 * for a failover test, instead of Redis' default 15 s) is failed over (its replica promoted). A
 * test that does not fail a node over gives Redis' 15 s: on a loaded machine a node busy for a
 * second would otherwise be failed over, and its shards refuse writes while their new master has
 * no replica (REDIS_WAIT_REPLICAS).
 */
export async function startPrivateRedisCluster(
  replicas: 0 | 1 = 0,
  { nodeTimeoutMs = 1_000 }: { nodeTimeoutMs?: number } = {},
): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-redis-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const exited: Array<Promise<void>> = [];
  const startNode = async () => {
    const port = await freePort();
    ports.push(port);
    const child = spawnRedisServer(port, dir, [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${port}.conf`,
      '--dbfilename',
      `dump-${port}.rdb`,
      '--appendonly',
      'no',
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // A replica's first sync starts at once, not after Redis' default 5 s wait for more replicas.
      '--repl-diskless-sync-delay',
      '0',
    ]);
    children.push(child);
    exited.push(new Promise<void>((resolve) => child.once('exit', () => resolve())));
    return port;
  };
  for (let i = 0; i < 3 * (1 + replicas); i++) await startNode();
  const live = new Set(ports);
  const destroy = async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(exited);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await waitFor(`cluster node ${port} to answer`, () => pingRedis(port));
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    await promisify(execFile)('redis-cli', [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitFor('the cluster to cover every slot', () => clusterReady(ports));
    // A full sync forks the master; on a loaded machine it takes far longer than the cluster's
    // slot assignment.
    if (replicas > 0) await waitFor('every replica online', () => replicasInSync(ports), 60_000);
    return {
      nodes: addresses.join(','),
      async masters() {
        const ranges = await onNode([...live][0]!, (node) => node.cluster('SLOTS'));
        const byPort = new Map<number, Array<[number, number]>>();
        for (const [from, to, master] of ranges) {
          const port = master![1];
          const slots = byPort.get(port) ?? [];
          slots.push([from, to]);
          byPort.set(port, slots);
        }
        return [...byPort].map(([port, slots]) => ({ port, slots }));
      },
      async kill(port) {
        const index = ports.indexOf(port);
        live.delete(port);
        children[index]!.kill('SIGKILL');
        await exited[index];
      },
      async addReplica(masterPort) {
        const port = await startNode();
        live.add(port);
        await waitFor(`cluster node ${port} to answer`, () => pingRedis(port));
        const masterId = String(await onNode(masterPort, (node) => node.call('CLUSTER', 'MYID')));
        await onNode(port, (node) => node.call('CLUSTER', 'MEET', '127.0.0.1', String(masterPort)));
        await waitFor('the new node to know its master', async () =>
          String(await onNode(port, (node) => node.call('CLUSTER', 'NODES'))).includes(masterId),
        );
        await onNode(port, (node) => node.call('CLUSTER', 'REPLICATE', masterId));
        await waitFor('the new replica online', async () =>
          /slave0:.*state=online/.test(await onNode(masterPort, (node) => node.info('replication'))),
        );
        return port;
      },
      destroy,
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}
