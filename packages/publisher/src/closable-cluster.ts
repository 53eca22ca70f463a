/**
 * An ioredis Cluster client whose `disconnect()` ends it even while it is reconnecting.
 *
 * ioredis (5.11; 6.0 is the same) ends a cluster client when its pool of node connections drains.
 * A client that has lost every node (a failover caught it between slot maps, or the cluster is
 * down) waits to reconnect with its pool already empty, so `disconnect()` leaves it
 * `disconnecting` for ever: no `end` event, and the commands in its offline queue never settle.
 * BullMQ's `Worker.close()` disconnects its blocking connection and waits for that `end`, so a
 * worker closed then never finished closing (taskforcesh/bullmq#4656 is the same wait on one
 * Redis). This class then does what ioredis does for a client that never connected: status
 * `close`, then its close handling, which ends the client and fails its offline queue with
 * "None of startup nodes is available". Its duplicates, BullMQ's blocking connections, are of
 * this class too.
 */
import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';

/** The two private steps of ioredis' Cluster that end a client (`disconnect()` on a never-connected one). */
interface ClusterInternals {
  setStatus(status: 'close'): void;
  handleCloseEvent(): void;
}

export class ClosableCluster extends Cluster {
  readonly #startupNodes: ClusterNode[];

  constructor(startupNodes: ClusterNode[], options: ClusterOptions = {}) {
    super(startupNodes, options);
    this.#startupNodes = startupNodes;
  }

  override disconnect(reconnect = false): void {
    const stranded = !reconnect && this.status === 'reconnecting' && this.nodes().length === 0;
    super.disconnect(reconnect);
    if (stranded) {
      const internals = this as unknown as ClusterInternals;
      internals.setStatus('close');
      internals.handleCloseEvent();
    }
  }

  /** A new client on the same startup nodes (or `overrideStartupNodes`), of this class. */
  override duplicate(
    overrideStartupNodes: ClusterNode[] = [],
    overrideOptions: ClusterOptions = {},
  ): Cluster {
    return new ClosableCluster(
      overrideStartupNodes.length > 0 ? overrideStartupNodes : this.#startupNodes.slice(),
      { ...this.options, ...overrideOptions },
    );
  }
}
