/**
 * Micro-batching across concurrent callers, with DataLoader: one event-loop turn's calls (at most
 * `maxBatchSize`) run as one SQL statement or one `addBulk`, each caller awaiting its own result, so
 * nothing is acknowledged before it is written. A round trip costs about an HTTP attempt's CPU.
 */
import DataLoader from 'dataloader';

export interface BatchOptions {
  /** Most calls in one batch (default 100). */
  maxBatchSize?: number;
}

/**
 * A function of one input that runs `runBatch` (one result or Error per input, in order) over
 * concurrent calls. When a batch of several throws, each input runs alone, so one the database
 * refuses fails only its own call; `runBatch` must be all-or-nothing, as one SQL statement is.
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
    // The turn's end, not a fixed window: completions arriving together batch; an idle caller waits for nothing.
    batchScheduleFn: (callback) => setImmediate(callback),
  });
  return (input) => loader.load(input);
}
