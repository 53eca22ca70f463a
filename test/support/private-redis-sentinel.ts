/**
 * Redis behind Sentinel, of a test's own: one master, one replica and one sentinel (quorum 1) on
 * free ports in a temporary folder, for the tests that fail the master over. The
 * machine's shared server is never touched.
 */
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/lib/services.js';
import { pingRedis, spawnRedisServer } from '../../scripts/lib/private-redis.js';
import { waitFor } from '../../scripts/lib/wait.js';

/** A running master, replica and sentinel. */
export interface PrivateRedisSentinel {
  /** `host:port` of the sentinel: a REDIS_SENTINELS value. */
  sentinels: string;
  /** The master's name: a REDIS_SENTINEL_NAME value. */
  name: string;
  /** Port of the server the sentinel names master now. */
  masterPort(): Promise<number>;
  /**
   * `SENTINEL FAILOVER`: the replica becomes master, the master its replica. Resolves once the
   * sentinel names the new master.
   */
  failover(): Promise<void>;
  /** Stops everything and removes the folder. */
  destroy(): Promise<void>;
}

/** Starts master, replica (AOF `always`, as the README advises) and sentinel. */
export async function startPrivateRedisSentinel(): Promise<PrivateRedisSentinel> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-redis-sentinel-'));
  const name = 'webhooks-test';
  const [masterPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
  const durable = ['--appendonly', 'yes', '--appendfsync', 'always'];
  const children: ChildProcess[] = [
    spawnRedisServer(masterPort, dir, [...durable, '--appendfilename', `a-${masterPort}.aof`]),
    spawnRedisServer(replicaPort, dir, [
      ...durable,
      '--appendfilename',
      `a-${replicaPort}.aof`,
      '--replicaof',
      '127.0.0.1',
      String(masterPort),
    ]),
  ];
  const exited = children.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  const sentinel = new Redis(sentinelPort, '127.0.0.1', { lazyConnect: true });
  sentinel.on('error', () => {});
  const destroy = async () => {
    sentinel.disconnect();
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(exited);
    rmSync(dir, { recursive: true, force: true });
  };
  const masterPortNow = async () => {
    const [, port] = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
    return Number(port);
  };
  try {
    for (const port of [masterPort, replicaPort])
      await waitFor(`Redis ${port} to answer`, () => pingRedis(port));
    const config = path.join(dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} 1`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 10000`,
      ].join('\n') + '\n',
    );
    const child = spawnRedisServer(sentinelPort, dir, [], [config, '--sentinel']);
    children.push(child);
    exited.push(new Promise<void>((resolve) => child.once('exit', () => resolve())));
    await waitFor('the sentinel to answer', () => pingRedis(sentinelPort));
    await sentinel.connect();
    await waitFor('the sentinel to see the replica', async () => {
      const replicas = (await sentinel.call('SENTINEL', 'REPLICAS', name)) as string[][];
      return replicas.some((fields) => fields.includes('slave') && !fields.join(' ').includes('s_down'));
    });
    return {
      sentinels: `127.0.0.1:${sentinelPort}`,
      name,
      masterPort: masterPortNow,
      async failover() {
        const before = await masterPortNow();
        await sentinel.call('SENTINEL', 'FAILOVER', name);
        await waitFor('the sentinel to name a new master', async () => (await masterPortNow()) !== before);
      },
      destroy,
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}
