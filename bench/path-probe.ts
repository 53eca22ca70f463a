/**
 * The delivery path's probe: what one delivery costs Redis, told apart by who spends it, on a
 * stack of its own with a private Redis (nothing else runs there), one worker, events published
 * through the API.
 * - Commands per delivery, from MONITOR: a script's inner commands (MONITOR shows them as the
 *   `lua` client's, right after the script's call, since a script runs atomically) count with the
 *   script, and a command or script is BullMQ's when its first key is one of its queues' keys
 *   (`<prefix>:<queue>:…`), the project's otherwise.
 * - Client writes to Redis per delivery, of the API and of the worker: each service reaches Redis
 *   through a TCP relay of its own that counts the chunks its client writes (an auto-pipelined
 *   batch is one). Under load, writes carry several deliveries' commands; the round trips of one
 *   delivery's path are counted apart, over deliveries sent one at a time (each event published
 *   once the previous one was received), less the writes the same time idle costs (timers).
 * MONITOR slows Redis down: this probe counts, it does not time. The path's CPU and throughput are
 * the `throughput` and `operating` scenarios'.
 */
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { queueNames } from '@webhooks/shared';
import { startPrivateRedis } from '../scripts/lib/private-redis.js';
import { waitFor } from '../scripts/lib/wait.js';
import {
  startBareReceiver,
  startBenchStack,
  subscribe,
  waitForSucceeded,
  publishAtSteadyRate,
  postEvent,
} from './harness.js';
import { sheddingOff } from './api-scenarios.js';
import type { Progress } from './delivery-scenarios.js';
import type { BenchRow } from './table.js';

/** A TCP relay to Redis that counts what its clients write. */
interface CountingRelay {
  url: string;
  writes: number;
  close(): Promise<void>;
}

async function startCountingRelay(redisPort: number): Promise<CountingRelay> {
  const sockets = new Set<Socket>();
  const relay: CountingRelay = { url: '', writes: 0, close: async () => undefined };
  const server: Server = createServer((client) => {
    const upstream = connect(redisPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      relay.writes += 1;
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  relay.url = `redis://127.0.0.1:${(server.address() as { port: number }).port}`;
  relay.close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return relay;
}

/** Commands counted by MONITOR, by whose they are. */
export interface CommandCounts {
  bullmq: number;
  project: number;
  /** Commands without a key (connection set-up, INFO, PING). */
  other: number;
  /** The project's commands and scripts' inner ones, by the command or script's first key's kind. */
  projectByKey: Record<string, number>;
}

/** Which of {@link CommandCounts} a command whose first key is `key` belongs to. */
export function commandOwner(key: string | undefined, bullmqKey: RegExp): 'bullmq' | 'project' | 'other' {
  if (key === undefined) return 'other';
  return bullmqKey.test(key) ? 'bullmq' : 'project';
}

/** The first key a command names, or undefined for a command without one. */
function firstKey(args: string[]): string | undefined {
  const name = args[0]?.toLowerCase();
  if (name === 'evalsha' || name === 'eval') return Number(args[2]) > 0 ? args[3] : undefined;
  if (name === 'xread' || name === 'xreadgroup')
    return args[args.findIndex((a) => a.toUpperCase() === 'STREAMS') + 1];
  const keyless = [
    'client',
    'info',
    'ping',
    'hello',
    'select',
    'script',
    'multi',
    'exec',
    'time',
    'config',
    'command',
    'monitor',
  ];
  return name === undefined || keyless.includes(name) ? undefined : args[1];
}

/** Counts every command Redis runs while `counting` is on, attributed as {@link CommandCounts} says. */
async function startMonitor(url: string) {
  const bullmqKey = new RegExp(`:(${Object.values(queueNames).join('|')}):`);
  const counts: CommandCounts = { bullmq: 0, project: 0, other: 0, projectByKey: {} };
  const state = {
    counting: false,
    scriptOwner: 'other' as keyof Omit<CommandCounts, 'projectByKey'>,
    scriptKey: '',
  };
  const client = new Redis(url);
  const monitor = await client.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (!state.counting) return;
    let owner: 'bullmq' | 'project' | 'other';
    let kindKey: string;
    if (source === 'lua') {
      owner = state.scriptOwner;
      kindKey = state.scriptKey;
    } else {
      const key = firstKey(args);
      owner = commandOwner(key, bullmqKey);
      // The part of the key that names what it is: `gate`, `host`, `sched`, `claim`, …
      kindKey = `${args[0]?.toLowerCase()} ${key?.split(':').find((part, i) => i > 0 && !/^[{s]?[0-9a-f-]{8,}/.test(part)) ?? ''}`;
      const name = args[0]?.toLowerCase();
      if (name === 'evalsha' || name === 'eval') {
        state.scriptOwner = owner;
        state.scriptKey = kindKey;
      }
    }
    counts[owner] += 1;
    if (owner === 'project') counts.projectByKey[kindKey] = (counts.projectByKey[kindKey] ?? 0) + 1;
  });
  return {
    counts,
    start() {
      state.counting = true;
    },
    async stop() {
      state.counting = false;
      monitor.disconnect();
      client.disconnect();
    },
  };
}

/** What one load of the probe cost per delivery. */
export interface PathCost {
  deliveries: number;
  /** Per delivery. */
  bullmqCommands: number;
  projectCommands: number;
  allCommands: number;
  apiWrites: number;
  workerWrites: number;
  /** Round trips of one delivery's path, sent alone (null when the load measures none). */
  apiRoundTrips: number | null;
  workerRoundTrips: number | null;
  /** The project's commands per delivery by key kind, most first. */
  projectByKey: Record<string, number>;
}

/** A probe load: events into `subscriptions` of one of `accounts` accounts, at a steady `rate` or all at once. */
export interface PathLoad {
  name: string;
  accounts: number;
  subscriptions: number;
  events: number;
  /** Events a second after a warm-up of 3 s that is not counted; undefined: all at once, 50 in flight. */
  rate?: number;
  /** Events then sent one at a time to count one delivery's round trips (one subscription each). */
  serial?: number;
}

/**
 * The writes per delivery of `count` deliveries sent one at a time: each event published once the
 * previous one was received, less what the services write idle for as long (timers, samplers).
 */
async function serialRoundTrips(
  count: number,
  publish: (i: number) => Promise<string>,
  received: (id: string) => boolean,
  relays: { api: CountingRelay; worker: CountingRelay },
): Promise<{ api: number; worker: number }> {
  const idleMs = 3_000;
  const idleStart = { api: relays.api.writes, worker: relays.worker.writes };
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  const idlePerMs = {
    api: (relays.api.writes - idleStart.api) / idleMs,
    worker: (relays.worker.writes - idleStart.worker) / idleMs,
  };
  const start = { api: relays.api.writes, worker: relays.worker.writes, at: performance.now() };
  for (let i = 0; i < count; i += 1) {
    const id = await publish(1_000_000 + i);
    await waitFor('the delivery received', () => received(id), 30_000, 1);
  }
  // The last attempt's record and release follow its receipt.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const elapsedMs = performance.now() - start.at;
  const per = (writes: number, idle: number) => Number(((writes - idle * elapsedMs) / count).toFixed(2));
  return {
    api: per(relays.api.writes - start.api, idlePerMs.api),
    worker: per(relays.worker.writes - start.worker, idlePerMs.worker),
  };
}

/** Runs `load` on a stack of its own and returns its cost per delivery. */
export async function measurePath(load: PathLoad, progress: Progress): Promise<PathCost> {
  const redis = await startPrivateRedis('everysec');
  const receiver = await startBareReceiver();
  const redisPort = Number(new URL(redis.url).port);
  const apiRelay = await startCountingRelay(redisPort);
  const workerRelay = await startCountingRelay(redisPort);
  // Shedding off: MONITOR slows Redis, and the API would shed the probe's publishes it only counts.
  const stack = await startBenchStack(
    `path-${load.name}`,
    { REDIS_URL: apiRelay.url, ...sheddingOff },
    1,
    undefined,
    {
      REDIS_URL: workerRelay.url,
    },
  );
  const monitor = await startMonitor(redis.url);
  try {
    const accounts = Array.from({ length: load.accounts }, (_, i) => `path-${i}`);
    for (const account of accounts)
      await subscribe(stack, account, `${receiver.url}/hook`, load.subscriptions);
    const tokens = accounts.map((account) => stack.token(account));
    const publish = (i: number) => postEvent(stack, tokens[i % tokens.length]!, i);
    // A first round warms the services up (connections, compiled code) and is not counted.
    const warmup = load.rate === undefined ? Math.min(200, load.events) : load.rate * 3;
    let started = performance.timeOrigin + performance.now();
    for (let i = 0; i < warmup; i += 1) await publish(i);
    await waitForSucceeded(stack, warmup * load.subscriptions, 300_000, { sinceMs: started });
    const before = { api: apiRelay.writes, worker: workerRelay.writes };
    monitor.start();
    started = performance.timeOrigin + performance.now();
    if (load.rate === undefined) {
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < load.events) await publish(warmup + next++);
        }),
      );
    } else {
      await publishAtSteadyRate({
        rate: load.rate,
        warmupSeconds: 0,
        seconds: load.events / load.rate,
        publish,
      });
    }
    const deliveries = load.events * load.subscriptions;
    await waitForSucceeded(stack, deliveries, 600_000, {
      sinceMs: started,
      onProgress: (done) => progress(`path, ${load.name}`, done, deliveries),
    });
    // The last attempts' records and releases finish after their deliveries read as succeeded.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await monitor.stop();
    const loadWrites = { api: apiRelay.writes - before.api, worker: workerRelay.writes - before.worker };
    const serial =
      load.serial === undefined
        ? null
        : await serialRoundTrips(load.serial, publish, (id) => receiver.confirmed.has(id), {
            api: apiRelay,
            worker: workerRelay,
          });
    const { counts } = monitor;
    const per = (n: number) => Number((n / deliveries).toFixed(2));
    return {
      deliveries,
      bullmqCommands: per(counts.bullmq),
      projectCommands: per(counts.project),
      allCommands: per(counts.bullmq + counts.project + counts.other),
      apiWrites: per(loadWrites.api),
      workerWrites: per(loadWrites.worker),
      apiRoundTrips: serial?.api ?? null,
      workerRoundTrips: serial?.worker ?? null,
      projectByKey: Object.fromEntries(
        Object.entries(counts.projectByKey)
          .sort((a, b) => b[1] - a[1])
          .map(([key, n]) => [key, per(n)]),
      ),
    };
  } finally {
    await stack.close();
    await Promise.all([apiRelay.close(), workerRelay.close(), receiver.close()]);
    await redis.destroy();
  }
}

/** What the delivery path's code holds, counted in its sources. */
export interface PathCodeCounts {
  /** The project's own Lua scripts: `defineCommand`, `defineScript` and `eval` sites in the services' and packages' sources. */
  luaScripts: number;
  /** Places in the worker's code that wake a waiting delivery job: calls of BullMQ's `promote`. */
  wakeUps: number;
  /** Lines of `apps/worker/src` that are neither blank nor comments. */
  workerLines: number;
}

/** Counts {@link PathCodeCounts} in the repository at `root`. */
export async function pathCodeCounts(root: string): Promise<PathCodeCounts> {
  const { readFile, readdir } = await import('node:fs/promises');
  const path = await import('node:path');
  const sources = async (dir: string): Promise<string[]> =>
    (await readdir(path.join(root, dir), { recursive: true }))
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
      .map((file) => path.join(root, dir, file));
  const code = async (files: string[]) =>
    (await Promise.all(files.map((file) => readFile(file, 'utf8'))))
      .flatMap((text) => text.split('\n'))
      .filter((line) => {
        const trimmed = line.trim();
        return trimmed !== '' && !/^(\/\/|\/\*|\*)/.test(trimmed);
      });
  const worker = await code(await sources('apps/worker/src'));
  const services = [
    ...worker,
    ...(await code(await sources('apps/api/src'))),
    ...(await code([
      ...(await sources('packages/shared/src')),
      ...(await sources('packages/publisher/src')),
    ])),
  ];
  const count = (lines: string[], pattern: RegExp) => lines.filter((line) => pattern.test(line)).length;
  return {
    // defineCommand('webhook…') directly, or defineScript({ name: 'webhook…' }), or a raw eval.
    luaScripts: count(services, /\.defineCommand\('|\bname: 'webhook[A-Z]|\bredis\.eval\(/),
    wakeUps: count(worker, /\.promote\(\)/),
    workerLines: worker.length,
  };
}

/** The probe's loads: one subscription per event, a fan-out, and one subscription at a steady rate. */
export function pathLoads(quick: boolean): { spread: PathLoad; fanOut: PathLoad; steady: PathLoad } {
  return {
    spread: {
      name: 'spread',
      accounts: 20,
      subscriptions: 1,
      events: quick ? 500 : 2_000,
      serial: quick ? 50 : 200,
    },
    fanOut: { name: 'fan-out', accounts: 1, subscriptions: 50, events: quick ? 10 : 40 },
    steady: { name: 'steady', accounts: 1, subscriptions: 1, events: quick ? 1_000 : 2_000, rate: 200 },
  };
}

/** The `path` scenario: each load's cost, the code's counts, and their rows against the targets. */
export async function pathScenario(
  quick: boolean,
  root: string,
  progress: Progress,
): Promise<{ results: Record<string, unknown>; rows: BenchRow[] }> {
  const loads = pathLoads(quick);
  const spread = await measurePath(loads.spread, progress);
  const fanOut = await measurePath(loads.fanOut, progress);
  const steady = await measurePath(loads.steady, progress);
  const code = await pathCodeCounts(root);
  const top = (cost: PathCost) =>
    Object.entries(cost.projectByKey)
      .slice(0, 5)
      .map(([key, n]) => `${key} ${n}`)
      .join(', ');
  const row = (
    scenario: string,
    figure: string,
    baseline: string,
    target: string,
    met: boolean,
  ): BenchRow => ({
    scenario,
    figure,
    baseline,
    ratio: null,
    target,
    met,
  });
  return {
    results: { spread, fanOut, steady, code },
    rows: [
      row(
        "the project's own Redis commands per delivery, scripts' inner ones included, BullMQ's excluded: one subscription per event",
        `${spread.projectCommands} (${top(spread)})`,
        `BullMQ's: ${spread.bullmqCommands}; all: ${spread.allCommands}`,
        '≤ 10',
        spread.projectCommands <= 10,
      ),
      row(
        "client round trips to Redis of one delivery's path: worker / API, one subscription per event",
        `${spread.workerRoundTrips} / ${spread.apiRoundTrips} (sent one at a time)`,
        `under load: ${spread.workerWrites} / ${spread.apiWrites} writes per delivery`,
        '≤ 3 / ≤ 2',
        (spread.workerRoundTrips ?? Infinity) <= 3 && (spread.apiRoundTrips ?? Infinity) <= 2,
      ),
      row(
        'all Redis commands per delivery: fan-out 1 → 50',
        `${fanOut.allCommands} (project ${fanOut.projectCommands}, BullMQ ${fanOut.bullmqCommands}; worker writes ${fanOut.workerWrites})`,
        '—',
        '≤ 15',
        fanOut.allCommands <= 15,
      ),
      row(
        'all Redis commands per delivery: one subscription at 200 events/s',
        `${steady.allCommands} (project ${steady.projectCommands}: ${top(steady)}; BullMQ ${steady.bullmqCommands})`,
        '—',
        '≤ 60',
        steady.allCommands <= 60,
      ),
      row(
        "the delivery path's code: the project's Lua scripts / places that wake a waiting job / apps/worker/src lines of code",
        `${code.luaScripts} / ${code.wakeUps} / ${code.workerLines}`,
        '—',
        '≤ 5 / 1 / ≤ 5,000',
        code.luaScripts <= 5 && code.wakeUps <= 1 && code.workerLines <= 5_000,
      ),
    ],
  };
}
