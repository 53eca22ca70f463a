// Stops a command early, with one clear line, when PostgreSQL or Redis cannot be reached.
// Runs before `pnpm install`, so it uses Node's standard library only.
import net from 'node:net';

const services = [
  [
    'PostgreSQL',
    'DATABASE_URL',
    process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/webhooks',
    5432,
  ],
  ['Redis', 'REDIS_URL', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 6379],
];

function reachable(host, port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 3000 });
    socket.once('connect', () => resolve(socket.end() && true));
    socket.once('timeout', () => resolve(socket.destroy() && false));
    socket.once('error', () => resolve(false));
  });
}

let ok = true;
for (const [name, variable, url, defaultPort] of services) {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const where = `${host}:${port || defaultPort}`;
  if (!(await reachable(host, Number(port || defaultPort)))) {
    ok = false;
    console.error(
      `${name} is not reachable at ${where} (${variable}). Start it, for example with ` +
        '`docker compose -f docker/compose.yaml up -d postgres redis`, or set ' +
        `${variable}, then run the command again.`,
    );
  }
}
process.exit(ok ? 0 : 1);
