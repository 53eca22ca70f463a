/**
 * The worker's optional health endpoint (WORKER_HEALTH_PORT): `/healthz` answers 200 while the
 * process runs, `/readyz` 200 when both BullMQ workers are running and PostgreSQL answers, 503
 * otherwise. Meant for orchestrators' probes; the worker has no other HTTP surface.
 */
import { createServer, type Server } from 'node:http';
import type { RunningWorker } from './worker.js';

/** Starts the health server on `host:port`. */
export function startHealthServer(worker: RunningWorker, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    const reply = (status: number, body: object) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.url === '/healthz') return reply(200, { status: 'ok' });
    if (request.url !== '/readyz') return reply(404, { status: 'not found' });
    const running = worker.events.isRunning() && worker.deliveries.isRunning();
    worker.prisma.$queryRaw`SELECT 1`.then(
      () => reply(running ? 200 : 503, { status: running ? 'ready' : 'not running' }),
      () => reply(503, { status: 'postgresql not reachable' }),
    );
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}
