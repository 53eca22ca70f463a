/**
 * An ioredis Cluster whose `disconnect()` ends it while reconnecting: ioredis 5.11 leaves one that
 * lost every node `disconnecting` for ever, hanging BullMQ's `Worker.close()` (taskforcesh/bullmq#4656).
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
