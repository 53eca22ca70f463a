import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { createEventPublisher, generateSigningSecret, type EventPublisher } from '@webhooks/shared';
import { loadWorkerConfig, startWorker } from '../src/index.js';
import { attemptErrorMessages } from '../src/delivery/attempt.js';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { spawnWorker, type WorkerProcess } from '../../../test/support/worker-process.js';
import { waitFor } from '../../../scripts/lib/wait.js';
import { freePort } from '../../../scripts/lib/services.js';

let api: TestApi;
let receiver: Receiver;
let publisher: EventPublisher;
const spawned: WorkerProcess[] = [];
const spawnTestWorker = (env: Record<string, string> = {}) => {
  const worker = spawnWorker({ ...workerEnv(), LOG_LEVEL: 'info', ...env });
  spawned.push(worker);
  return worker;
};
const workerEnv = () =>
  testEnv(api.database.url, api.prefix, {
    CALLBACK_ALLOW_PRIVATE: 'true',
    DELIVERY_TIMEOUT_MS: '1000',
    DELIVERY_BACKOFF_MS: '100',
    WORKER_CONCURRENCY: '5',
  });

beforeAll(async () => {
  api = await startTestApi('resilience', { CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
  publisher = createEventPublisher({
    redis: testRedisUrl,
    prefix: api.prefix,
    catalogue: api.config.catalogue,
  });
});
afterAll(async () => {
  for (const worker of spawned) worker.child.kill('SIGKILL');
  await publisher.close();
  await receiver.close();
  await api.close();
});

async function subscribe(account: string, path: string) {
  const response = await api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: api.auth(account),
    payload: { callback_url: `${receiver.url}${path}` },
  });
  return response.json() as { id: string };
}

const statusOf = async (subscriptionId: string, eventId: string) =>
  (
    await api.app.prisma.delivery.findFirst({
      where: { eventId, subscriptionId },
    })
  )?.status;

describe('a worker killed in the middle of a delivery', () => {
  it('loses nothing: another worker delivers the event, with the same webhook-id', async () => {
    receiver.script('/killed', ['hang', 200]);
    const sub = await subscribe('acct-kill', '/killed');
    const first = spawnTestWorker();
    const { id } = await publisher.publish({ accountId: 'acct-kill', type: 'call.started', data: {} });
    await waitFor('the first attempt to arrive', () => receiver.at('/killed').length === 1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = spawnTestWorker();
    try {
      await waitFor(
        'the delivery by the second worker',
        async () => (await statusOf(sub.id, id)) === 'succeeded',
        30_000,
      );
      const requests = receiver.at('/killed');
      expect(requests).toHaveLength(2);
      expect(requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});

describe('graceful shutdown', () => {
  it('lets a running delivery finish on SIGTERM, then exits 0', async () => {
    receiver.script('/slow', [{ status: 200, afterMs: 700 }]);
    const sub = await subscribe('acct-slow', '/slow');
    const healthPort = await freePort();
    const worker = spawnTestWorker({ WORKER_HEALTH_PORT: String(healthPort) });
    await waitFor('the worker to start', () => worker.output.join('').includes('worker started'));
    const health = (path: string) => fetch(`http://127.0.0.1:${healthPort}${path}`).then((r) => r.status);
    expect(await health('/healthz')).toBe(200);
    // Ready once its Redis and PostgreSQL connections answer, a moment after the start line.
    await waitFor('the worker to be ready', async () => (await health('/readyz')) === 200);
    const { id } = await publisher.publish({ accountId: 'acct-slow', type: 'call.started', data: {} });
    await waitFor('the delivery to be under way', () => receiver.at('/slow').length === 1);
    worker.child.kill('SIGTERM');
    expect(await statusOf(sub.id, id)).toBe('pending');
    expect(await worker.exited).toBe(0);
    expect(await statusOf(sub.id, id)).toBe('succeeded');
  });
});

describe('callback addresses refused at connect time', () => {
  it('gives up at once, without retrying, on a callback resolving to a private address', async () => {
    // Written straight to the database: the API itself refuses such a callback URL.
    const subscription = await api.app.prisma.subscription.create({
      data: {
        id: uuidv7(),
        accountId: 'acct-ssrf',
        callbackUrl: `${receiver.url}/ssrf`,
        secret: generateSigningSecret(),
      },
    });
    const guarded = startWorker(
      loadWorkerConfig({ ...workerEnv(), CALLBACK_ALLOW_PRIVATE: 'false' }),
      pino({ level: 'silent' }),
    );
    try {
      const { id } = await publisher.publish({ accountId: 'acct-ssrf', type: 'call.started', data: {} });
      await waitFor('the delivery given up', async () => (await statusOf(subscription.id, id)) === 'failed');
      const attempts = await api.app.prisma.deliveryAttempt.findMany({
        where: { delivery: { eventId: id } },
      });
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ errorClass: 'blocked_address', statusCode: null });
      expect(receiver.at('/ssrf')).toHaveLength(0);
      // What the account reads names no address or host, so the log cannot map the network.
      const log = await api.app.inject({
        url: `/api/webhooks/${subscription.id}/deliveries/${attempts[0]!.deliveryId}`,
        headers: api.auth('acct-ssrf'),
      });
      expect(log.statusCode).toBe(200);
      // Worded and classed as a name that does not resolve is: the log tells the two apart for no one.
      expect(log.json().attempts[0]).toMatchObject({
        error: 'unreachable_address',
        error_message: attemptErrorMessages.dns,
      });
      expect(log.body).not.toMatch(/127\.0\.0\.1|localhost/);
    } finally {
      await guarded.close();
    }
  });

  it.each([
    ['an address in CALLBACK_DENY_CIDRS', { CALLBACK_DENY_CIDRS: '127.0.0.0/8' }],
    ['a port outside CALLBACK_PORTS', { CALLBACK_PORTS: '80,443' }],
  ])('gives up at once, without connecting, on %s', async (_, env) => {
    const account = `acct-policy-${Object.keys(env)[0]!.toLowerCase()}`;
    const path = `/${account}`;
    const subscription = await subscribe(account, path);
    const guarded = startWorker(loadWorkerConfig({ ...workerEnv(), ...env }), pino({ level: 'silent' }));
    try {
      const { id } = await publisher.publish({ accountId: account, type: 'call.started', data: {} });
      await waitFor('the delivery given up', async () => (await statusOf(subscription.id, id)) === 'failed');
      const attempts = await api.app.prisma.deliveryAttempt.findMany({
        where: { delivery: { eventId: id } },
      });
      expect(attempts.map((a) => a.errorClass)).toEqual(['blocked_address']);
      expect(receiver.at(path)).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });
});
