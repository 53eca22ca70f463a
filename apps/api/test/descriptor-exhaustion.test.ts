/**
 * More connections than the API's process has file descriptors, against the built API as deployed,
 * started with a low limit (`ulimit -n 256`) on a database and queue prefix of the test's own: the
 * connections past its bound are closed at once, the process stays up through it, and it answers
 * health checks and publishes again once they are gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { freePort, waitUntilReady } from '../../../scripts/lib/services.js';
import { repositoryRoot } from '../../../scripts/lib/repository-root.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

const descriptors = 256;
let api: TestApi;
let child: ChildProcess;
let url: string;
let port: number;
let exited = false;

beforeAll(async () => {
  api = await startTestApi('descriptor-exhaustion');
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  child = spawn(
    'bash',
    ['-c', `ulimit -n ${descriptors} && exec "$0" apps/api/dist/server.js`, process.execPath],
    {
      cwd: repositoryRoot(),
      env: {
        ...process.env,
        ...testEnv(api.database.url, api.prefix, {
          HOST: '127.0.0.1',
          PORT: String(port),
          LOG_LEVEL: 'error',
        }),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  child.once('exit', () => {
    exited = true;
  });
  await waitUntilReady(url);
}, 60_000);
afterAll(async () => {
  if (!exited) {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await gone;
  }
  await api.close();
}, 30_000);

/** Opens a connection and holds it; resolves with whether the server closed it within `ms`. */
function hold(sockets: Socket[], ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    const timer = setTimeout(() => resolve(false), ms);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('a client holding more connections than the API has descriptors', () => {
  it('gets the connections past the bound closed, and the API stays up and answers once they go', async () => {
    const sockets: Socket[] = [];
    const closed = await Promise.all(Array.from({ length: 2 * descriptors }, () => hold(sockets, 3_000)));
    // Held for a while: no timer of the process may end it meanwhile.
    await sleep(500);
    expect(exited).toBe(false);
    expect(closed.filter(Boolean).length).toBeGreaterThan(0);
    expect(closed.filter((wasClosed) => !wasClosed).length).toBeGreaterThan(0);
    for (const socket of sockets) socket.destroy();

    await waitFor(
      'health answered again',
      async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok === true,
    );
    const published = await fetch(`${url}/api/events`, {
      method: 'POST',
      headers: { ...api.auth('acct-descriptors'), 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'call.completed', data: {} }),
    });
    expect(published.status).toBe(202);
    expect(exited).toBe(false);
  }, 60_000);
});
