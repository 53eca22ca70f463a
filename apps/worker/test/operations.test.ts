/**
 * The worker as platform teams run it: a fan-out-only and a delivery-only process
 * side by side (WORKER_QUEUES), their log lines traceable by event and request id, their
 * `/metrics` moving with a delivery, a start-up line without secrets, and `/readyz` failing while
 * Redis or PostgreSQL is unreachable.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { prometheusSample } from '../../../scripts/lib/prometheus-sample.js';
import { startTestApi, testEncryptionKey, testEnv, type TestApi } from '../../../test/support/api.js';
import { startPrivateRedis } from '../../../scripts/lib/private-redis.js';
import { startReceiver, type Receiver } from '../../../scripts/lib/receiver.js';
import { spawnWorker, type WorkerProcess } from '../../../test/support/worker-process.js';
import { waitFor } from '../../../scripts/lib/wait.js';
import { freePort } from '../../../scripts/lib/services.js';

const metricsToken = 'worker-metrics-token';
let api: TestApi;
let receiver: Receiver;
const spawned: WorkerProcess[] = [];

beforeAll(async () => {
  api = await startTestApi('operations', { CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const worker of spawned) worker.child.kill('SIGKILL');
  await receiver.close();
  await api.close();
});

/** A worker process on the test's database and prefix, its health port returned. */
async function startWorkerProcess(env: Record<string, string>) {
  const port = await freePort();
  const worker = spawnWorker({
    ...testEnv(api.database.url, api.prefix, {
      CALLBACK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
      WORKER_HEALTH_PORT: String(port),
      METRICS_TOKEN: metricsToken,
    }),
    ...env,
  });
  spawned.push(worker);
  const base = `http://127.0.0.1:${port}`;
  await waitFor('the worker to log its start', () => worker.output.join('').includes('worker started'));
  return { worker, base, lines: () => worker.output.join('').split('\n').filter(Boolean) };
}

const logged = (lines: string[], message: string) =>
  lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === message);

describe('workers split by role', () => {
  it('a fan-out-only and a delivery-only process deliver together, each logging its part of the event', async () => {
    const fanOut = await startWorkerProcess({ WORKER_QUEUES: 'events' });
    const delivery = await startWorkerProcess({ WORKER_QUEUES: 'deliveries' });
    const subscribed = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('acct-ops'),
      payload: { callback_url: `${receiver.url}/ops` },
    });
    const published = await api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: { ...api.auth('acct-ops'), 'x-request-id': 'trace-ops-1' },
      payload: { type: 'call.completed', data: { call_id: 'c-ops' } },
    });
    const eventId: string = published.json().id;
    // The server's own request id, not the caller's, is the one that travels.
    const requestId = published.headers['x-request-id'];
    expect(requestId).not.toBe('trace-ops-1');
    await waitFor('the delivery', () => receiver.at('/ops').length === 1);
    const [succeeded] = await waitFor('the success logged', () => {
      const lines = logged(delivery.lines(), 'delivery succeeded');
      return lines.length > 0 && lines;
    });

    const [fannedOut] = logged(fanOut.lines(), 'event fanned out');
    expect(fannedOut).toMatchObject({ eventId, requestId, deliveries: 1 });
    expect(succeeded).toMatchObject({
      eventId,
      requestId,
      subscriptionId: subscribed.json().id,
      status: 200,
      attempt: 1,
    });
    expect(typeof succeeded?.deliveryId).toBe('string');
    expect(typeof succeeded?.durationMs).toBe('number');
    expect(logged(fanOut.lines(), 'delivery succeeded')).toHaveLength(0);
    expect(logged(delivery.lines(), 'event fanned out')).toHaveLength(0);
    expect(fanOut.lines().filter((line) => line.includes(eventId)).length).toBeGreaterThan(0);

    const [started] = logged(delivery.lines(), 'worker started');
    expect(started).toMatchObject({ queues: ['deliveries'] });
    expect((started?.config as Record<string, unknown>).SECRETS_ENCRYPTION_KEY).toBe('redacted');
    expect(delivery.lines().join('\n')).not.toContain(testEncryptionKey);
    expect(delivery.lines().join('\n')).not.toContain(metricsToken);

    expect((await fetch(`${delivery.base}/metrics`)).status).toBe(401);
    const scrape = async (base: string) =>
      (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const metrics = await scrape(delivery.base);
    expect(prometheusSample(metrics, 'webhook_deliveries_total{outcome="succeeded"}')).toBe(1);
    expect(prometheusSample(metrics, 'webhook_attempt_duration_seconds_count{status_class="2xx"}')).toBe(1);
    expect(prometheusSample(metrics, 'webhook_delivery_latency_seconds_count')).toBe(1);
    expect(metrics).toContain('webhook_reconciler_redriven_total');
    expect(metrics).toContain('process_resident_memory_bytes');
    await waitFor('the account scheduler in the queue sample', async () =>
      (await scrape(delivery.base)).includes('webhook_scheduler_waiting{what="deliveries",shard="0"} 0'),
    );
    // The fan-out process samples its queue: nothing waits once the event was fanned out.
    await waitFor('the fan-out queue in the queue sample', async () =>
      (await scrape(fanOut.base)).includes('webhook_queue_jobs{queue="events",state="waiting",shard="0"} 0'),
    );
    expect(prometheusSample(await scrape(fanOut.base), 'webhook_deliveries_total{outcome="succeeded"}')).toBe(
      0,
    );
  });

  it('bounds its heap to WORKER_MAX_HEAP_MB when started as a bare `node main.js`, and refuses a bound that is no number', async () => {
    const bounded = await startWorkerProcess({ WORKER_MAX_HEAP_MB: '96' });
    const [started] = logged(bounded.lines(), 'worker started');
    // V8's limit is the old generation plus the young one's semi-spaces (tens of MiB).
    expect(started?.heapLimitMiB).toBeGreaterThanOrEqual(96);
    expect(started?.heapLimitMiB).toBeLessThan(96 + 64);
    const refused = spawnWorker(testEnv(api.database.url, api.prefix, { WORKER_MAX_HEAP_MB: 'lots' }));
    spawned.push(refused);
    expect(await refused.exited).toBe(1);
    expect(refused.output.join('')).toContain('WORKER_MAX_HEAP_MB');
  });

  it('refuses an unknown queue in WORKER_QUEUES at start, naming the variable', async () => {
    const worker = spawnWorker(testEnv(api.database.url, api.prefix, { WORKER_QUEUES: 'events,mail' }));
    spawned.push(worker);
    expect(await worker.exited).not.toBe(0);
    expect(worker.output.join('')).toContain('WORKER_QUEUES');
  });
});

describe('/readyz', () => {
  it('answers at most 600 checks a minute from one address, then 429 with Retry-After', async () => {
    const { base } = await startWorkerProcess({});
    const answers = await Promise.all(
      Array.from({ length: 610 }, () =>
        fetch(`${base}/readyz`).then((r) => [r.status, r.headers.get('retry-after')]),
      ),
    );
    const refused = answers.filter(([status]) => status === 429);
    expect(refused).toHaveLength(10);
    for (const [, retryAfter] of refused) expect(Number(retryAfter)).toBeGreaterThan(0);
    // The others are readiness answers, sharing checks: 200, or 503 while the worker settles.
    expect(answers.filter(([status]) => status !== 429 && status !== 200 && status !== 503)).toEqual([]);
  });

  it('fails while Redis is unreachable, and while PostgreSQL is', async () => {
    const redis = await startPrivateRedis();
    try {
      const worker = await startWorkerProcess({ REDIS_URL: redis.url });
      const ready = async () => {
        const response = await fetch(`${worker.base}/readyz`);
        return {
          status: response.status,
          body: (await response.json()) as { checks: Record<string, string> },
        };
      };
      await waitFor('readiness', async () => (await ready()).status === 200);
      await redis.kill();
      const down = await waitFor('readiness to fail', async () => {
        const answer = await ready();
        return answer.status === 503 && answer;
      });
      expect(down.body.checks).toMatchObject({ redis: 'unreachable', postgresql: 'ok' });
    } finally {
      await redis.destroy();
    }
    const noDatabase = await startWorkerProcess({
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${await freePort()}/none`,
    });
    const answer = await waitFor('Redis connected', async () => {
      const response = await fetch(`${noDatabase.base}/readyz`);
      const body = (await response.json()) as { checks: Record<string, string> };
      return body.checks.redis === 'ok' && { status: response.status, checks: body.checks };
    });
    expect(answer).toEqual({ status: 503, checks: expect.objectContaining({ postgresql: 'unreachable' }) });
  });
});
