/**
 * The transport baseline's client, as a process of its own so that its CPU is its alone:
 * `node dist/bench/transport-client.js <url> <count> <concurrency>` prints one JSON line,
 * `{"postsPerSecond": …, "clientCpuMsPerPost": …}` (harness.ts, `sendTransportLoad`).
 */
import { sendTransportLoad } from './harness.js';

const [url, count, concurrency] = process.argv.slice(2);
if (url === undefined || count === undefined || concurrency === undefined) {
  throw new Error('usage: transport-client.js <url> <count> <concurrency>');
}
console.log(JSON.stringify(await sendTransportLoad(url, Number(count), Number(concurrency))));
process.exit(0);
