/**
 * A burst is not an overload: the built API, as deployed, with its default bounds on its own
 * waits, accepts a burst of concurrent publishes right after it first answers `/readyz` 200, and a
 * larger one once warm, with no 503: they are answered within a fraction of a second, so no
 * request waits past a bound, however busy the process is meanwhile. The warm-up it runs before
 * listening queues nothing. Events waiting for their fan-out past its bound do shed, and only the
 * account filling the queue.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { queueNames } from '@webhooks/shared';
import { warmUp, warmUpRequests } from '../src/warm-up.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { freePort, waitUntilReady } from '../../../scripts/lib/services.js';
import { repositoryRoot } from '../../../scripts/lib/repository-root.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let api: TestApi;
let child: ChildProcess;
let url: string;

beforeAll(async () => {
  api = await startTestApi('burst');
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = testEnv(api.database.url, api.prefix, {
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  // The service's default shedding bounds, which test services turn off.
  for (const name of Object.keys(env)) if (name.startsWith('API_SHED_')) delete env[name];
  // No worker fans these events out: their growing wait is an overload by its own measure, which
  // the last test here covers.
  env.API_SHED_MAX_FANOUT_WAIT_MS = '0';
  child = spawn(process.execPath, ['apps/api/dist/server.js'], {
    cwd: repositoryRoot(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}, 60_000);
afterAll(async () => {
  if (child.exitCode === null) {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await gone;
  }
  await api.close();
}, 30_000);

/** `count` publishes of `account` sent at once; their statuses, in the order sent. */
async function burst(account: string, count: number): Promise<number[]> {
  const headers = { ...api.auth(account), 'content-type': 'application/json' };
  const answers = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      fetch(`${url}/api/events`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ type: 'call.completed', data: { i } }),
      }).then(async (response) => {
        await response.arrayBuffer();
        return response.status;
      }),
    ),
  );
  return answers;
}

describe('a burst of concurrent publishes', () => {
  it('is accepted whole by an API that has just said it is ready, and again once it is warm', async () => {
    await waitUntilReady(url);
    expect(await burst('acct-burst', 80)).toEqual(Array<number>(80).fill(202));
    for (let i = 0; i < 5; i++) await burst('acct-burst', 20);
    expect(await burst('acct-burst', 200)).toEqual(Array<number>(200).fill(202));
  }, 60_000);
});

describe('the warm-up before the API listens', () => {
  it('runs the publish path to its validation, and queues no event', async () => {
    const events = new Queue(queueNames.events, { connection: { url: testRedisUrl }, prefix: api.prefix });
    try {
      const before = await events.count();
      expect(await warmUp(api.app, api.config)).toBe(warmUpRequests);
      expect(await events.count()).toBe(before);
    } finally {
      await events.close();
    }
  });
});

describe('events waiting for their fan-out past API_SHED_MAX_FANOUT_WAIT_MS', () => {
  it('shed the account that keeps publishing, and not a quiet one', async () => {
    // No worker: the first event waits for its fan-out until its age passes the bound.
    const stalled = await startTestApi('fanout-wait', {
      API_SHED_MAX_FANOUT_WAIT_MS: '200',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    try {
      const publish = async (account: string) =>
        (
          await stalled.app.inject({
            method: 'POST',
            url: '/api/events',
            headers: stalled.auth(account),
            payload: { type: 'call.completed', data: {} },
          })
        ).statusCode;
      const statuses: number[] = [];
      await waitFor('a publish shed', async () => {
        statuses.push(await publish('acct-filling'));
        return statuses.at(-1) === 503;
      });
      expect(statuses.slice(0, -1).every((status) => status === 202)).toBe(true);
      expect(statuses[0]).toBe(202);
      expect(await publish('acct-quiet')).toBe(202);
    } finally {
      await stalled.close();
    }
  });
});
