/**
 * Micro-batching of database work across concurrent jobs, with DataLoader: calls made by up to
 * `maxBatchSize` jobs within `windowMs` run as one SQL statement, and each job still awaits its own
 * result before it is acknowledged. On these machines every statement costs the worker about as
 * much CPU as a whole HTTP attempt (Prisma's per-query overhead, a socket write and a wake-up of
 * PostgreSQL), so batching is what lets delivery keep up with the transport (bench/README.md).
 */
import DataLoader from 'dataloader';

/** Options of {@link batcher}. */
export interface BatchOptions {
  /** How long the first call of a batch waits for others, in ms (default 2). */
  windowMs?: number;
  /** Most calls in one batch (default 100). */
  maxBatchSize?: number;
}

/**
 * A function of one input that runs `runBatch` over the inputs of concurrent calls. `runBatch`
 * returns one result per input, in order; an Error in that array fails only its own call, and a
 * thrown error fails every call of the batch.
 */
export function batcher<I, O>(
  runBatch: (inputs: readonly I[]) => Promise<Array<O | Error>>,
  options: BatchOptions = {},
): (input: I) => Promise<O> {
  const windowMs = options.windowMs ?? 2;
  const loader = new DataLoader<I, O>(runBatch, {
    cache: false,
    maxBatchSize: options.maxBatchSize ?? 100,
    batchScheduleFn: (callback) => setTimeout(callback, windowMs),
  });
  return (input) => loader.load(input);
}
