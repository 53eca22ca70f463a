/**
 * `pnpm demo [--events 1000]`: runs the end-to-end demo (scripts/demo/run.ts) with a progress bar
 * and prints its summary table and one retried delivery's log. Uses running services when API_URL
 * is set (with their JWT_SECRET and QUEUE_PREFIX), starts its own otherwise. Exit status 0 only
 * when every delivery arrived verified, exactly once.
 */
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import Table from 'cli-table3';
import { runDemo } from './demo/run.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '1000' } } });
const events = Number(values.events);
if (!Number.isInteger(events) || events < 1) {
  console.error('usage: pnpm demo [--events N]');
  process.exit(2);
}

const bar = new SingleBar(
  { format: 'delivering |{bar}| {value}/{total} deliveries', hideCursor: true },
  Presets.shades_classic,
);
let started = false;
const summary = await runDemo({
  events,
  apiUrl: process.env.API_URL,
  onProgress: (delivered, expected) => {
    if (!started) {
      bar.start(expected, 0);
      started = true;
    }
    bar.update(delivered);
  },
});
bar.stop();

const table = new Table({ head: ['', 'value'] });
table.push(
  ['events published', summary.eventsPublished],
  ['deliveries expected', summary.deliveriesExpected],
  ['deliveries confirmed', summary.deliveriesConfirmed],
  ['retries (answers of 500 on purpose)', summary.retries],
  ['deliveries failed for good', summary.failures],
  ['signature failures', summary.signatureFailures],
  ['duplicates', summary.duplicates],
  ['latency publish → receipt p50', `${summary.latencyP50Ms.toFixed(1)} ms`],
  ['latency publish → receipt p99', `${summary.latencyP99Ms.toFixed(1)} ms`],
  ...(summary.workerMetrics === null
    ? []
    : [
        ['worker /metrics: deliveries succeeded', summary.workerMetrics.succeeded],
        ['worker /metrics: attempts retried', summary.workerMetrics.retry],
      ]),
);
console.log(table.toString());
console.log('Delivery log of one retried delivery (GET /api/webhooks/{id}/deliveries/{delivery_id}):');
console.log(JSON.stringify(summary.retriedDeliveryLog, null, 2));
console.log(
  summary.ok ? 'OK: every delivery arrived, verified, exactly once.' : 'FAILED: see the table above.',
);
process.exit(summary.ok ? 0 : 1);
