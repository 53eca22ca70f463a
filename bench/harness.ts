/**
 * What every benchmark scenario shares: a stack of its own (database, queue prefix, API and worker
 * processes started from the built code, the project's receiver answering 200 and counting without
 * keeping), and the transport baseline (the worker's own HTTP client posting straight to the
 * receiver).
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createPrismaClient, migrate, migrationsDir, type PrismaClient } from '@webhooks/db';
import { Queue, Worker } from 'bullmq';
import {
  createEventPublisher,
  exampleCatalogueFile,
  loadCatalogue,
  redisSettingsOfEnv,
  createProducerConnection,
  createWorkerConnection,
  type EventPublisher,
} from '@webhooks/shared';
import { createTokenMinter } from '@webhooks/api';
import { createWebhookClient, type WebhookClient } from '@webhooks/client';
import { createAttemptSender, userAgent } from '@webhooks/worker';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../scripts/lib/services.js';
import { startReceiver, type Receiver } from '../scripts/lib/receiver.js';
import { waitFor } from '../scripts/lib/wait.js';
import { connectionCpuMs } from './process-cpu.js';
import { describeStall } from './stall-report.js';

/** What the benchmark receiver answers a path: a status, or hold the request unanswered until closed. */
export type BareAnswer = number | 'hang';

/**
 * Starts the project's receiver (`scripts/lib/receiver.ts`) as the benchmarks use it: requests
 * are counted, not kept, and `answer(path)` decides each answer (default always 200).
 */
export function startBareReceiver(answer: (path: string) => BareAnswer = () => 200): Promise<Receiver> {
  return startReceiver({ answer: (request) => answer(request.path), keepRequests: false });
}

/** A benchmark stack: its own database and prefix, API and worker processes. */
export interface BenchStack {
  apiUrl: string;
  databaseUrl: string;
  prefix: string;
  redisUrl: string;
  prisma: PrismaClient;
  jwtSecret: string;
  api: ServiceProcess;
  workers: ServiceProcess[];
  /** Starts one more worker process on this stack, with `nodeArgs` before its entry point. */
  addWorker(nodeArgs?: string[]): ServiceProcess;
  /**
   * Stops the API and every worker, then starts as many again with the same settings; resolves
   * once the API answers `/readyz` (the workers may still be connecting). Two processes of the
   * same code and settings differ by up to 10-20% in CPU per request for their whole lifetime
   * (measured: ingest on three identical stacks, 0.34-0.40 ms of API CPU per request), so a
   * comparison of two stacks takes fresh processes in each of its rounds.
   */
  restartServices(): Promise<void>;
  token(account: string): string;
  close(): Promise<void>;
}

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const sharedRedisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A database of a benchmark's own on BENCH_DATABASE_URL's server: `url`, and `drop()` to remove it. */
export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Creates and migrates a database named `wh_bench_<tag>_<random>`, with the migrations of `dir` (default: the project's). */
export async function createBenchDatabase(tag: string, dir = migrationsDir): Promise<BenchDatabase> {
  const name = `wh_bench_${tag}_${randomBytes(3).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await migrate({ databaseUrl: url.toString(), migrationsDir: dir });
  return {
    url: url.toString(),
    async drop() {
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/**
 * Starts a stack; `env` is added to both services' environment, `workerEnv` to the workers' after
 * it. `prepareDatabase` changes the freshly migrated database before the services start. With
 * `REDIS_URL` in `env`, the stack's own connections (cleanup, probes) use it too.
 */
export async function startBenchStack(
  tag: string,
  env: Record<string, string> = {},
  workerCount = 1,
  prepareDatabase?: (databaseUrl: string) => Promise<void>,
  workerEnv: Record<string, string> = {},
): Promise<BenchStack> {
  const redisUrl = env.REDIS_URL ?? sharedRedisUrl;
  const database = await createBenchDatabase(tag);
  const databaseUrl = database.url;
  await prepareDatabase?.(databaseUrl);
  const prefix = `wh-bench-${tag}-${randomBytes(3).toString('hex')}`;
  const jwtSecret = randomBytes(32).toString('hex');
  const port = await freePort();
  const serviceEnv = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    JWT_SECRET: jwtSecret,
    PORT: String(port),
    HOST: '127.0.0.1',
    CALLBACK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
    ...env,
  };
  // BENCH_API_NODE_ARGS / BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profile the services.
  const nodeArgsOf = (name: string) => process.env[name]?.split(' ').filter(Boolean);
  const startApi = () => startService('api', serviceEnv, { nodeArgs: nodeArgsOf('BENCH_API_NODE_ARGS') });
  let api = startApi();
  const workers: ServiceProcess[] = [];
  /** Each worker's node arguments, by its index in `workers`, to restart it as it was started. */
  const workerArgs: string[][] = [];
  const addWorker = (nodeArgs: string[] = []) => {
    const worker = startService('worker', { ...serviceEnv, ...workerEnv }, { nodeArgs });
    workers.push(worker);
    workerArgs.push(nodeArgs);
    return worker;
  };
  const profileArgs = nodeArgsOf('BENCH_WORKER_NODE_ARGS');
  for (let i = 0; i < workerCount; i++) addWorker(profileArgs);
  const apiUrl = `http://127.0.0.1:${port}`;
  await waitUntilReady(apiUrl);
  const prisma = createPrismaClient({ databaseUrl, poolSize: 2 });
  const mint = createTokenMinter({ secret: jwtSecret });
  return {
    apiUrl,
    databaseUrl,
    prefix,
    redisUrl,
    prisma,
    jwtSecret,
    get api() {
      return api;
    },
    workers,
    addWorker,
    async restartServices() {
      await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())]);
      workers.length = 0;
      api = startApi();
      for (const nodeArgs of workerArgs.splice(0)) addWorker(nodeArgs);
      await waitUntilReady(apiUrl);
    },
    token: (account) => mint(account),
    async close() {
      await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())]);
      await prisma.$disconnect();
      await database.drop();
      const redis = new Redis(redisUrl);
      const keys = await redis.keys(`${prefix}:*`);
      for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
      redis.disconnect();
    },
  };
}

/**
 * Runs `run` on a fresh stack (`env` added to the services' environment, `workers` worker
 * processes, `prepareDatabase` as in {@link startBenchStack}), a publisher on its queues and a bare
 * receiver answering `answer()`; closes all three afterwards, whatever happens.
 */
export async function withBenchStack<T>(
  options: {
    tag: string;
    env?: Record<string, string>;
    workers?: number;
    answer?: (path: string) => BareAnswer;
    prepareDatabase?: ((databaseUrl: string) => Promise<void>) | undefined;
  },
  run: (stack: BenchStack, publisher: EventPublisher, receiver: Receiver) => Promise<T>,
): Promise<T> {
  const receiver = await startBareReceiver(options.answer);
  try {
    const stack = await startBenchStack(
      options.tag,
      options.env,
      options.workers ?? 1,
      options.prepareDatabase,
    );
    // The services' Redis and shards, read from the same variables as theirs: a cluster when the
    // scenario gives one.
    const { redis, shards } = redisSettingsOfEnv({ ...options.env, REDIS_URL: stack.redisUrl });
    const publisher = createEventPublisher({
      redis,
      shards: shards.count,
      prefix: stack.prefix,
      catalogue: loadCatalogue(exampleCatalogueFile),
    });
    try {
      return await run(stack, publisher, receiver);
    } finally {
      await publisher.close();
      await stack.close();
    }
  } finally {
    await receiver.close();
  }
}

/** Creates `count` subscriptions of `account` on `callbackUrl` through the API; returns their ids. */
export async function subscribe(
  stack: BenchStack,
  account: string,
  callbackUrl: string,
  count = 1,
  fields: Record<string, unknown> = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${stack.apiUrl}/api/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.token(account)}`, 'content-type': 'application/json' },
      // `fields` may replace the callback (a broker `destination`, with `callback_url: undefined`).
      body: JSON.stringify({ callback_url: callbackUrl, webhook_id: `bench-${i}`, ...fields }),
    });
    if (response.status !== 201) throw new Error(`subscribe answered ${response.status}`);
    ids.push(((await response.json()) as { id: string }).id);
  }
  return ids;
}

/** The typed client of each API and token the bench publishes with. */
const clients = new Map<string, WebhookClient>();

/**
 * Publishes event `n`, a `call.completed`, through `POST /api/events` as the account of `token`,
 * with the typed client as a client app would (see {@link publishWith}), one client per API and
 * token.
 *
 * @returns the event id
 * @throws Error when the API answers anything but 202 after the client's retries
 */
export async function postEvent(stack: BenchStack, token: string, n: number): Promise<string> {
  const key = `${stack.apiUrl} ${token}`;
  let client = clients.get(key);
  if (client === undefined) {
    client = createWebhookClient({ baseUrl: stack.apiUrl, token });
    clients.set(key, client);
  }
  return publishWith(client, n);
}

/**
 * Publishes event `n`, a `call.completed`, with `client`: under an idempotency key, so that a 503
 * the API sheds with `Retry-After` (a saturated event loop, at a stack's start too) is sent again
 * after it.
 *
 * @returns the event id
 * @throws Error when the API answers anything but 202 after the client's retries
 */
export async function publishWith(client: WebhookClient, n: number): Promise<string> {
  const { data, error, response } = await client.POST('/api/events', {
    body: { type: 'call.completed', data: { call_id: `c-${n}`, duration_s: n % 600 } },
    headers: { 'idempotency-key': randomUUID() },
  });
  if (response.status !== 202 || data === undefined)
    throw new Error(`POST /api/events answered ${response.status}: ${error?.detail ?? ''}`);
  return data.id;
}

/** A delivery-sized JSON body, as both throughput baselines send it. */
const baselineBody = JSON.stringify({
  timestamp: '2026-11-21T10:15:30.123',
  type: 'call.completed',
  webhook_id: 'bench-0',
  data: { call_id: 'c', n: 1 },
});

/** The worker's own HTTP client, as the baselines use it: `concurrency` keep-alive sockets. */
const baselineSender = (concurrency: number) =>
  createAttemptSender({
    timeoutMs: 10_000,
    policy: { allowPrivate: true, ports: [[1, 65535]], denyCidrs: [] },
    maxSockets: concurrency,
    userAgent,
  });

/** The transport baseline's figures. */
export interface TransportBaseline {
  postsPerSecond: number;
  /** CPU the client process used per POST, in ms (user + system). */
  clientCpuMsPerPost: number;
}

/** Which client a transport load posts with: the worker's (got), or bare `node:http` for reference. */
export type TransportClient = 'worker' | 'node-http';

/** One POST of `body` with `headers`, resolved once the answer is read. */
type Post = (url: string, body: string, headers: Record<string, string>) => Promise<void>;

/**
 * A bare `node:http` POST over `concurrency` keep-alive sockets: no SSRF checks, no timeout, no
 * error classes. The reference the worker's got client is reported beside.
 */
function nodeHttpPost(concurrency: number): { post: Post; close: () => void } {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const post: Post = (url, body, headers) =>
    new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
  return { post, close: () => agent.destroy() };
}

/**
 * Sends `count` POSTs of a delivery-sized body to `url`, `concurrency` at a time, with `client`
 * (the worker's own HTTP client by default); POSTs a second, and this process's CPU per POST in
 * ms. Run by {@link transportBaseline} in a process of its own (transport-client.ts).
 */
export async function sendTransportLoad(
  url: string,
  count: number,
  concurrency: number,
  client: TransportClient = 'worker',
): Promise<TransportBaseline> {
  let post: Post;
  let close: () => void;
  if (client === 'worker') {
    const sender = baselineSender(concurrency);
    post = async (to, body, headers) => void (await sender.send(to, body, headers));
    close = () => sender.close();
  } else {
    ({ post, close } = nodeHttpPost(concurrency));
  }
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const id = `baseline-${next++}`;
        await post(url, baselineBody, { 'content-type': 'application/json', 'webhook-id': id });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  close();
  return { postsPerSecond: count / seconds, clientCpuMsPerPost: (cpu.user + cpu.system) / 1000 / count };
}

/**
 * The transport baseline: `count` POSTs of a delivery-sized body, `concurrency` at a time, with
 * the worker's own HTTP client (`createAttemptSender`, its keep-alive agent), straight to the
 * receiver: no queue, no database. The client runs in a process of its own, as a worker does, so
 * that its CPU per POST is the client's alone (the receiver stays in this process). `client`
 * `node-http` posts with bare `node:http` instead, for reference.
 */
export async function transportBaseline(
  count: number,
  concurrency: number,
  client: TransportClient = 'worker',
): Promise<TransportBaseline> {
  const receiver = await startBareReceiver();
  try {
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(new URL('./transport-client.js', import.meta.url)),
        `${receiver.url}/hook`,
        String(count),
        String(concurrency),
        client,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`the transport client exited with ${code}`);
    return JSON.parse(output) as TransportBaseline;
  } finally {
    await receiver.close();
  }
}

/**
 * The queue floor: the least a delivery costs in this design, one BullMQ job per POST. `count`
 * jobs are added in bulk (chunks of 500) while a BullMQ worker (`concurrency` slots, the
 * services' Redis connection settings, a queue prefix of its own) takes each and sends its POST
 * with the worker's HTTP client, as the transport baseline does: no fan-out, no database, no
 * gate. Returns jobs completed per second, from the first add to the last completion.
 */
export async function queueFloorBaseline(count: number, concurrency: number): Promise<number> {
  const receiver = await startBareReceiver();
  const sender = baselineSender(concurrency);
  const prefix = `wh-bench-floor-${randomBytes(3).toString('hex')}`;
  const producer = createProducerConnection(sharedRedisUrl);
  const consumer = createWorkerConnection(sharedRedisUrl);
  const queue = new Queue<{ n: number }>('floor', { connection: producer, prefix });
  let completed = 0;
  let allDone = () => {};
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const started = performance.now();
  const worker = new Worker<{ n: number }>(
    'floor',
    async (job) => {
      await sender.send(`${receiver.url}/hook`, baselineBody, {
        'content-type': 'application/json',
        'webhook-id': `floor-${job.data.n}`,
      });
      if (++completed === count) allDone();
    },
    { connection: consumer, prefix, concurrency },
  );
  for (let n = 0; n < count; n += 500) {
    const chunk = Array.from({ length: Math.min(500, count - n) }, (_, i) => n + i);
    await queue.addBulk(
      chunk.map((i) => ({ name: 'floor', data: { n: i }, opts: { removeOnComplete: true } })),
    );
  }
  await done;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  consumer.disconnect();
  sender.close();
  await receiver.close();
  return count / seconds;
}

/** Options of {@link waitForSucceeded}. */
export interface SucceededWait {
  /** Called with the count of each poll. */
  onProgress?(done: number): void;
  /**
   * Only the deliveries of events accepted since count (ms since epoch): a log filled beforehand is
   * left out, and each poll reads only the day partitions from then on.
   */
  sinceMs?: number;
  /**
   * Called once the count is reached, with the CPU ms its polling connection's PostgreSQL backend
   * used, so that a cost probe can leave the bench's own polling out of the service's cost.
   */
  onPollCpuMs?(ms: number): void;
}

/**
 * Waits until `expected` deliveries of the stack are recorded as succeeded (polling the database
 * every 100 ms) and returns the time of the last poll that saw them all, ms since epoch. With
 * `sinceMs`, this relies on the API minting event ids as UUIDv7 from the same host's clock as the
 * bench's (the stack runs on this machine), and on a delivery's id beginning with its event's time.
 *
 * The count is a named statement on a connection of its own: PostgreSQL plans it once and prunes
 * the days at each run. Planned at every poll over the day partitions, as an unnamed statement
 * is, the bench's own count cost the partitioned log about twice the PostgreSQL CPU it cost plain
 * tables. Even planned once, it costs PostgreSQL a few ms a poll over a large load, which
 * `onPollCpuMs` reports.
 *
 * @throws Error after `timeoutMs`, saying what the stack holds then (`stall-report.ts`)
 */
export async function waitForSucceeded(
  stack: BenchStack,
  expected: number,
  timeoutMs: number,
  options: SucceededWait = {},
): Promise<number> {
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    const succeeded = async () => {
      const { rows } = await db.query<{ done: number }>({
        name: 'bench-succeeded',
        text: `SELECT count(*)::int AS done FROM deliveries WHERE status = 'succeeded' AND id >= $1::uuid`,
        values: [lowestIdAt(options.sinceMs ?? 0)],
      });
      const done = rows[0]!.done;
      options.onProgress?.(done);
      return done >= expected;
    };
    await waitFor(`${expected} deliveries to succeed`, succeeded, timeoutMs, 100).catch(
      async (error: Error) => {
        throw new Error(`${error.message}; ${await describeStall(db, stack.redisUrl, stack.prefix)}`);
      },
    );
    const finishedAt = performance.timeOrigin + performance.now();
    if (options.onPollCpuMs) options.onPollCpuMs(await connectionCpuMs(db));
    return finishedAt;
  } finally {
    await db.end();
  }
}

/** The lowest UUIDv7 of time `ms` (ms since epoch), as delivery ids begin with their event's time. */
function lowestIdAt(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-0000-0000-000000000000`;
}

/**
 * Publishes at a steady `rate` events per second: `warmupSeconds` of events that are not measured
 * (workers starting, pools connecting, code warming up), then `seconds` that are. `publish(i)`
 * sends event `i` at its due time, without waiting for earlier ones, and resolves with its id.
 *
 * @returns when each measured event was sent (ms since epoch, sub-ms) by id, the same of the warm-up's
 *   events, and when the last publish resolved; after every publish has resolved
 */
export async function publishAtSteadyRate(options: {
  rate: number;
  warmupSeconds: number;
  seconds: number;
  publish(i: number): Promise<string>;
  onProgress?(done: number, total: number): void;
}): Promise<{ sentAt: Map<string, number>; warmupSentAt: Map<string, number>; end: number }> {
  const { rate, publish } = options;
  const warmup = rate * options.warmupSeconds;
  const total = warmup + rate * options.seconds;
  const sentAt = new Map<string, number>();
  const warmupSentAt = new Map<string, number>();
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const at = performance.timeOrigin + performance.now();
    pending.push(
      publish(i).then((id) => {
        (i >= warmup ? sentAt : warmupSentAt).set(id, at);
      }),
    );
    if (i % rate === 0) options.onProgress?.(i, total);
  }
  await Promise.all(pending);
  return { sentAt, warmupSentAt, end: performance.timeOrigin + performance.now() };
}
