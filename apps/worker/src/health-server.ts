/**
 * The worker's operator endpoint (WORKER_HEALTH_PORT): `/healthz`; `/readyz` (200 when its workers
 * run, PostgreSQL and Redis answer within 2 s and the schedules exist, else 503 naming each failed
 * check; {@link readinessPerMinutePerIp} a minute per address, one shared check); `/metrics`.
 */
import { createServer, type Server } from 'node:http';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { operatorTokenAccepted } from '@webhooks/shared';
import type { RunningWorker } from './worker.js';

/** `/readyz` requests a minute from one address: ten probes a second, far above any orchestrator's. */
export const readinessPerMinutePerIp = 600;

const readinessTimeoutMs = 2_000;

const answersWithin = (pending: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([
    pending.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
  ]);

/** Readiness of `worker`: HTTP status and body. */
async function readiness(worker: RunningWorker): Promise<[number, object]> {
  const [postgresql, redis] = await Promise.all([
    answersWithin(worker.prisma.$queryRaw`SELECT 1`, readinessTimeoutMs),
    answersWithin(worker.redis.ping(), readinessTimeoutMs),
  ]);
  const running = [...worker.events, ...worker.deliveries].every((consumer) => consumer.isRunning());
  const missing = worker.schedules.missing();
  const checks = {
    postgresql: postgresql ? 'ok' : 'unreachable',
    redis: redis ? 'ok' : 'unreachable',
    workers: running ? 'ok' : 'not running',
    schedules: missing.length === 0 ? 'ok' : `missing: ${missing.join(', ')}`,
  };
  const ready = postgresql && redis && running && missing.length === 0;
  return [ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks }];
}

/** Starts the server on `host:port`; `metricsToken` is METRICS_TOKEN ('' leaves `/metrics` open). */
export function startHealthServer(
  worker: RunningWorker,
  host: string,
  port: number,
  metricsToken = '',
): Promise<Server> {
  const perAddress = new RateLimiterMemory({ points: readinessPerMinutePerIp, duration: 60 });
  let checking: Promise<[number, object]> | null = null;
  const readinessOnce = () => {
    checking ??= readiness(worker).finally(() => {
      checking = null;
    });
    return checking;
  };
  const server = createServer((request, response) => {
    const reply = (status: number, body: object) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const fail = (error: unknown) => reply(500, { status: (error as Error).message });
    if (request.url === '/healthz') return reply(200, { status: 'ok' });
    if (request.url === '/readyz') {
      return void perAddress.consume(request.socket.remoteAddress ?? '').then(
        () => readinessOnce().then(([status, body]) => reply(status, body), fail),
        (refusal: unknown) => {
          const ms = refusal instanceof RateLimiterRes ? refusal.msBeforeNext : 60_000;
          response.setHeader('retry-after', String(Math.max(1, Math.ceil(ms / 1000))));
          reply(429, { status: `more than ${readinessPerMinutePerIp} readiness checks a minute` });
        },
      );
    }
    if (request.url !== '/metrics') return reply(404, { status: 'not found' });
    if (metricsToken !== '' && !operatorTokenAccepted(request.headers.authorization, metricsToken)) {
      response.setHeader('www-authenticate', 'Bearer realm="metrics"');
      return reply(401, { status: 'METRICS_TOKEN is required' });
    }
    worker.metrics.metrics().then((text) => {
      response.writeHead(200, { 'content-type': worker.metrics.contentType }).end(text);
    }, fail);
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}
