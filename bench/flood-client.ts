/**
 * The clients of an open-loop flood, run in a worker thread (bench/flood-scenario.ts): they start
 * `rate` publishes a second for `seconds` whatever the API answers, over at most `sockets`
 * keep-alive connections. Each try has a 5 s timeout from when it has a connection; a try
 * answered 429 or 503, timed out or refused is tried again 500 ms later with the same idempotency
 * key, as a well-behaved client does, until `giveUpMs` after the start. Posts its {@link FloodClientReport} to the parent.
 */
import { Agent, request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

/** What the parent hands the thread. */
export interface FloodClientOptions {
  url: string;
  token: string;
  rate: number;
  seconds: number;
  sockets: number;
  giveUpMs: number;
}

/** What the thread reports. */
export interface FloodClientReport {
  /** Publishes started (first tries). */
  started: number;
  /** First tries by outcome: an HTTP status, `timeout` (no answer within 5 s) or `error`. */
  firstTries: Record<string, number>;
  /** Tries of every kind, retries included. */
  tries: number;
  /** Event ids answered 202, each once. */
  accepted: string[];
  /** Publishes never accepted by `giveUpMs`. */
  givenUp: number;
}

const tryTimeoutMs = 5_000;
const retryAfterMs = 500;

const options = workerData as FloodClientOptions;
const agent = new Agent({ keepAlive: true, maxSockets: options.sockets });
const started = performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One try: the status and, for a 202, the event id; `timeout` or `error` without an answer. */
function post(body: string): Promise<{ outcome: string; id?: string | undefined }> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const req = request(
      options.url,
      {
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          clearTimeout(timer);
          const status = response.statusCode ?? 0;
          const id =
            status === 202 ? (JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id : undefined;
          resolve({ outcome: String(status), id });
        });
        response.on('error', () => undefined);
      },
    );
    // The timeout runs from when the request has a connection, as a client of its own would
    // send it: time queued behind this thread's own connection bound is not the API's.
    req.once('socket', () => {
      timer = setTimeout(() => {
        req.destroy();
        resolve({ outcome: 'timeout' });
      }, tryTimeoutMs);
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve({ outcome: 'error' });
    });
    req.end(body);
  });
}

const report: FloodClientReport = { started: 0, firstTries: {}, tries: 0, accepted: [], givenUp: 0 };

/** Publishes event `n` until it is accepted or the client gives up. */
async function publish(n: number): Promise<void> {
  const body = JSON.stringify({ type: 'call.completed', data: { n }, idempotency_key: `flood-${n}` });
  for (let first = true; ; first = false) {
    report.tries += 1;
    const { outcome, id } = await post(body);
    if (first) report.firstTries[outcome] = (report.firstTries[outcome] ?? 0) + 1;
    if (id !== undefined) {
      report.accepted.push(id);
      return;
    }
    const retried = outcome === '429' || outcome === '503' || outcome === 'timeout' || outcome === 'error';
    if (!retried || performance.now() - started > options.giveUpMs) {
      report.givenUp += 1;
      return;
    }
    await sleep(retryAfterMs);
  }
}

const publishes: Promise<void>[] = [];
const total = Math.round(options.rate * options.seconds);
while (report.started < total) {
  // Open loop: as many started as the clock says, however the earlier ones fare.
  const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * options.rate));
  for (; report.started < due; report.started++) publishes.push(publish(report.started));
  await sleep(10);
}
await Promise.all(publishes);
agent.destroy();
parentPort!.postMessage({ ...report, accepted: [...new Set(report.accepted)] });
