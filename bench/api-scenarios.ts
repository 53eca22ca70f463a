/**
 * API benchmarks, autocannon at 50 connections against the API process and, in the same
 * run with the same settings, a baseline process (bench/baseline-server.ts).
 */
import autocannon from 'autocannon';
import { freePort, startService, waitUntilReady } from '../scripts/lib/services.js';
import { waitFor } from '../scripts/lib/wait.js';
import { startBenchStack, subscribe } from './harness.js';
import { roundsRatio } from './rounds.js';
import { percentile } from '../scripts/lib/stats.js';

/**
 * Load shedding off: a closed-loop load keeps the event loop saturated, and the capacity measured
 * here is what the API processes, not what it sheds.
 */
export const sheddingOff = {
  API_SHED_EVENT_LOOP_DELAY_MS: '0',
  API_SHED_MAX_WAIT_MS: '0',
  API_SHED_MAX_FANOUT_WAIT_MS: '0',
  API_SHED_MAX_IN_FLIGHT: '0',
};

/**
 * A backlog bound past what any ingest load publishes: no worker drains these stacks' events, and
 * at the default bound (100,000 events) a machine taking 10,000 requests a second answered 503 for
 * the rest of a 10 s load.
 */
export const unboundedBacklog = { BACKLOG_MAX_EVENTS: '100000000' };

/** A request of a load: its method (GET when absent), headers and body. */
export interface RequestOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

/**
 * One autocannon run of `seconds` at 50 connections: requests per second, and the requests
 * answered; refuses a run with errors, timeouts or non-2xx answers.
 */
export async function requestLoad(
  url: string,
  seconds: number,
  options: RequestOptions,
): Promise<{ perSecond: number; requests: number }> {
  const result = await autocannon({
    url,
    connections: 50,
    duration: seconds,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
  });
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(
      `${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx answers`,
    );
  }
  return { perSecond: result.requests.average, requests: result.requests.total };
}

/** Requests per second of one {@link requestLoad}. */
export async function requestRate(url: string, seconds: number, options: RequestOptions): Promise<number> {
  return (await requestLoad(url, seconds, options)).perSecond;
}

/** One load's figure against its baseline's: medians of the rounds, and the median of their ratios. */
export interface AgainstBaseline {
  requestsPerSecond: number;
  baseline: number;
  ratio: number;
  /** Each round's figure and baseline, in requests per second, in round order. */
  rounds: { measured: number[]; baseline: number[] };
}

/** {@link AgainstBaseline} of `measured` and `baseline`, each round's value in round order. */
function againstBaseline(measured: number[], baseline: number[]): AgainstBaseline {
  return {
    requestsPerSecond: percentile(measured, 50),
    baseline: percentile(baseline, 50),
    ratio: roundsRatio(measured, baseline),
    rounds: { measured, baseline },
  };
}

/**
 * Ingest (`POST /api/events`) against two baselines (a bare route, and a route doing only what an
 * accepted event requires) and authenticated reads (`GET /api/webhooks/{id}`) against a `pg` route;
 * each figure in requests per second, in `rounds` rounds of the five loads back to back. One run
 * of each moved more than the read target's margin between runs of the same code (0.60 to 0.95
 * over eight runs), and a round's ratio cancels the machine's drift between rounds.
 */
export async function apiThroughput(seconds: number, rounds: number, progress: (step: string) => void) {
  const stack = await startBenchStack('api', { LOG_LEVEL: 'error', ...sheddingOff, ...unboundedBacklog }, 0);
  // The API's rate limit applies as in production, with a ceiling the load never reaches.
  const port = await freePort();
  const baseline = startService('baseline', {
    PORT: String(port),
    JWT_SECRET: stack.jwtSecret,
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    QUEUE_PREFIX: stack.prefix,
  });
  try {
    const baselineUrl = `http://127.0.0.1:${port}`;
    await waitFor(
      'the baseline server',
      () =>
        fetch(`${baselineUrl}/baseline/events`, { method: 'POST' }).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
    );
    await waitUntilReady(stack.apiUrl);
    const [id] = await subscribe(stack, 'bench', 'https://client.example/hook');
    const headers = { authorization: `Bearer ${stack.token('bench')}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ type: 'call.completed', data: { call_id: 'c-1', duration_s: 42 } });
    const post = { method: 'POST' as const, headers, body };
    const load = (name: string, url: string, options: RequestOptions) => ({
      name,
      url,
      options,
      /** Requests per second of each round, in round order. */
      rates: [] as number[],
    });
    const ingestBaseline = load('ingest baseline', `${baselineUrl}/baseline/events`, post);
    const fairBaseline = load('fair ingest baseline', `${baselineUrl}/baseline/fair-events`, post);
    const ingest = load('ingest', `${stack.apiUrl}/api/events`, post);
    const readBaseline = load('read baseline', `${baselineUrl}/baseline/webhooks/${id}`, { headers });
    const read = load('read', `${stack.apiUrl}/api/webhooks/${id}`, { headers });
    for (let round = 1; round <= rounds; round++) {
      for (const { name, url, options, rates } of [
        ingestBaseline,
        fairBaseline,
        ingest,
        readBaseline,
        read,
      ]) {
        progress(`round ${round} of ${rounds}: ${name}`);
        rates.push(await requestRate(url, seconds, options));
      }
    }
    return {
      ingest: againstBaseline(ingest.rates, ingestBaseline.rates),
      fairIngest: againstBaseline(ingest.rates, fairBaseline.rates),
      read: againstBaseline(read.rates, readBaseline.rates),
    };
  } finally {
    await baseline.stop();
    await stack.close();
  }
}

/**
 * Requests a second of `POST /api/events` with `event` for `seconds`, on a stack of its own with
 * `env` (no worker, load shedding off, no backlog bound reached), one subscription receiving it.
 */
export async function ingestRate(
  tag: string,
  seconds: number,
  env: Record<string, string>,
  event: { type: string; data: Record<string, unknown> },
): Promise<number> {
  const stack = await startBenchStack(
    tag,
    { LOG_LEVEL: 'error', ...sheddingOff, ...unboundedBacklog, ...env },
    0,
  );
  try {
    await waitUntilReady(stack.apiUrl);
    await subscribe(stack, 'bench', 'https://client.example/hook');
    return await requestRate(`${stack.apiUrl}/api/events`, seconds, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.token('bench')}`, 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
  } finally {
    await stack.close();
  }
}
