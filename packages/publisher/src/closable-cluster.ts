/**
 * An ioredis Cluster client whose `disconnect()` ends it even while it is reconnecting. ioredis
 * 5.11 ends a cluster client when its node pool drains, so one that lost every node waits with an
 * empty pool and stays `disconnecting` for ever: no `end`, and its offline queue never settles,
 * which hangs BullMQ's `Worker.close()` (taskforcesh/bullmq#4656). This class then ends it as
 * ioredis ends a client that never connected. Its duplicates are of this class too.
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
