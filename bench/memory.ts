/**
 * Worker memory under a backlog: one worker process works through `events` events
 * fanned out to 100 subscriptions each while its resident set size is sampled from /proc. Flat
 * means the RSS late in the run is not much above the RSS early in it.
 */
import { readFile } from 'node:fs/promises';
import { subscribe, waitForSucceeded, withBenchStack } from './harness.js';

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/**
 * Peak RSS (MiB) and RSS at each quarter of the deliveries, of one worker delivering `events` × 100,
 * started with `nodeArgs` (e.g. the heap limit the worker image sets).
 */
export async function workerMemory(
  events: number,
  nodeArgs: string[],
  progress: (done: number, total: number) => void,
) {
  // The worker starts after the backlog is queued, so the whole backlog waits in Redis.
  return withBenchStack({ tag: 'memory', workers: 0 }, async (stack, publisher, receiver) => {
    await subscribe(stack, 'bench', `${receiver.url}/hook`, 100);
    for (let i = 0; i < events; i++)
      await publisher.publish({ accountId: 'bench', type: 'message.sent', data: { i } });
    const pid = stack.addWorker(nodeArgs).child.pid!;
    const total = events * 100;
    const samples: Array<{ done: number; rss: number }> = [];
    let done = 0;
    const sampler = setInterval(() => {
      rssMiB(pid).then(
        (rss) => samples.push({ done, rss }),
        () => undefined,
      );
    }, 200);
    await waitForSucceeded(stack, total, 900_000, {
      onProgress: (count) => {
        done = count;
        progress(count, total);
      },
    });
    clearInterval(sampler);
    const at = (fraction: number) => samples.find((s) => s.done >= total * fraction)?.rss ?? Number.NaN;
    return {
      deliveries: total,
      peakMiB: Math.max(...samples.map((s) => s.rss)),
      rssMiBAtQuarters: [at(0.25), at(0.5), at(0.75), samples.at(-1)?.rss ?? Number.NaN],
    };
  });
}
