/**
 * The transport baseline's client, as a process of its own so that its CPU is its alone:
 * `node dist/bench/transport-client.js <url> <count> <concurrency> [worker|node-http]` prints one JSON line,
 * `{"postsPerSecond": …, "clientCpuMsPerPost": …}` (harness.ts, `sendTransportLoad`).
 */
import { sendTransportLoad, type TransportClient } from './harness.js';

const [url, count, concurrency, client = 'worker'] = process.argv.slice(2);
if (url === undefined || count === undefined || concurrency === undefined) {
  throw new Error('usage: transport-client.js <url> <count> <concurrency> [worker|node-http]');
}
if (client !== 'worker' && client !== 'node-http') throw new Error(`unknown client ${client}`);
console.log(
  JSON.stringify(await sendTransportLoad(url, Number(count), Number(concurrency), client as TransportClient)),
);
process.exit(0);
