/**
 * Micro-batching of round trips across concurrent callers, with DataLoader: calls made within
 * one turn of the event loop, or within `windowMs` when set (at most `maxBatchSize` of them), run
 * as one SQL statement or one Redis `addBulk`, and
 * each caller still awaits its own result, so nothing is acknowledged before it is written. On the
 * project's machines one round trip costs about as much CPU as a whole HTTP attempt (Prisma's
 * per-query overhead, a socket write, a wake-up of PostgreSQL or Redis), so batching is what lets
 * publishing and delivery keep up with the transport (bench/README.md).
 */
import DataLoader from 'dataloader';

/** Options of {@link batcher}. */
export interface BatchOptions {
  /**
   * How long the first call of a batch waits for others, in ms. By default it waits only for the
   * rest of the current turn of the event loop (`setImmediate`): under load, the completions that
   * arrive together (answers from the receiver, PostgreSQL or Redis) batch together; when idle,
   * a call waits for nothing. A fixed window of 1-2 ms cost every job that wait at every step
   * (bench/README.md, "Issue #14").
   */
  windowMs?: number;
  /** Most calls in one batch (default 100). */
  maxBatchSize?: number;
}

/**
 * A function of one input that runs `runBatch` over the inputs of concurrent calls. `runBatch`
 * returns one result per input, in order; an Error in that array fails only its own call. When
 * `runBatch` throws for a batch of several, each input is run again alone, so one input the
 * database refuses fails only its own call and never its neighbours (issue #8: "poison stays with
 * the poisoner"). `runBatch` must therefore be all-or-nothing, as one SQL statement is.
 */
export function batcher<I, O>(
  runBatch: (inputs: readonly I[]) => Promise<Array<O | Error>>,
  options: BatchOptions = {},
): (input: I) => Promise<O> {
  const { windowMs } = options;
  const runAlone = (input: I) =>
    runBatch([input]).then(
      ([result]) => result as O | Error,
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    );
  const run = async (inputs: readonly I[]) => {
    try {
      return await runBatch(inputs);
    } catch (error) {
      if (inputs.length === 1) throw error;
      return Promise.all(inputs.map(runAlone));
    }
  };
  const loader = new DataLoader<I, O>(run, {
    cache: false,
    maxBatchSize: options.maxBatchSize ?? 100,
    batchScheduleFn: (callback) =>
      windowMs === undefined ? setImmediate(callback) : setTimeout(callback, windowMs),
  });
  return (input) => loader.load(input);
}
