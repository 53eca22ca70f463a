/**
 * Micro-batching of round trips across concurrent callers, with DataLoader: calls made within
 * one turn of the event loop (at most `maxBatchSize` of them) run as one SQL statement or one
 * Redis `addBulk`, and each caller still awaits its own result, so nothing is acknowledged before
 * it is written. On the project's machines one round trip costs about as much CPU as a whole HTTP
 * attempt (a socket write, a wake-up of PostgreSQL or Redis), so batching is what lets publishing
 * and delivery keep up with the transport.
 */
import DataLoader from 'dataloader';

/** Options of {@link batcher}. */
export interface BatchOptions {
  /** Most calls in one batch (default 100). */
  maxBatchSize?: number;
}

/**
 * A function of one input that runs `runBatch` over the inputs of concurrent calls. `runBatch`
 * returns one result per input, in order; an Error in that array fails only its own call. When
 * `runBatch` throws for a batch of several, each input is run again alone, so one input the
 * database refuses fails only its own call and never its neighbours ("poison stays with
 * the poisoner"). `runBatch` must therefore be all-or-nothing, as one SQL statement is.
 */
export function batcher<I, O>(
  runBatch: (inputs: readonly I[]) => Promise<Array<O | Error>>,
  options: BatchOptions = {},
): (input: I) => Promise<O> {
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
    // The end of the event loop's turn, not a fixed window: completions that arrive together
    // (answers from receivers, PostgreSQL or Redis) still batch, and an idle caller waits for
    // nothing.
    batchScheduleFn: (callback) => setImmediate(callback),
  });
  return (input) => loader.load(input);
}
