/**
 * Closing a cluster connection that has lost every node: ioredis leaves such a client waiting to
 * reconnect, and without `ClosableCluster` its `disconnect()` never ends it, so BullMQ's
 * `Worker.close()` waited for ever after a failover.
 */
import { once } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { freePort } from '../../../scripts/lib/services.js';
import { waitFor } from '../../../scripts/lib/wait.js';
import { createWorkerConnection, type RedisTopology } from '../src/index.js';

/** A cluster topology whose only node has nothing listening. */
async function unreachableCluster(): Promise<RedisTopology> {
  const port = await freePort();
  return { mode: 'cluster', nodes: [{ host: '127.0.0.1', port }], url: `redis://127.0.0.1:${port}` };
}

describe('a cluster connection that has lost every node', () => {
  it('ends when disconnected, failing the commands it held', async () => {
    const connection = createWorkerConnection(await unreachableCluster());
    connection.on('error', () => {});
    await waitFor('the client waiting to reconnect', () => connection.status === 'reconnecting');
    const held = connection.get('key');
    const ended = once(connection, 'end');
    connection.disconnect();
    await ended;
    expect(connection.status).toBe('end');
    await expect(held).rejects.toThrow(/None of startup nodes is available/);
  });
});
