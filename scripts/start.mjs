// `pnpm start` (after setup): runs the API and one worker together, prefixed logs, and stops both
// when either exits or on Ctrl-C. Scale workers by starting more `node apps/worker/dist/main.js`.
import { randomBytes } from 'node:crypto';
import concurrently from 'concurrently';

// A local run is development unless told otherwise: production refuses the public development
// JWT secret and unencrypted signing secrets (docs/security.md).
process.env.NODE_ENV ??= 'development';
const development = process.env.NODE_ENV === 'development';
// Readable lines on a terminal; JSON when the output goes to a file or another program.
if (development && process.stdout.isTTY) process.env.LOG_PRETTY ??= 'true';
// The queue dashboard needs a token; a local run gets one of its own, printed below.
if (development) process.env.ADMIN_TOKEN ??= randomBytes(12).toString('hex');

// The OpenTelemetry SDK, loaded first; it does nothing unless OTEL_* variables ask for traces.
const instrument = '--import ./packages/shared/dist/instrument.js';

const host = process.env.HOST ?? '127.0.0.1';
const port = process.env.PORT ?? '3000';
const workerPort = process.env.WORKER_HEALTH_PORT ?? '3001';
const api = `http://${host}:${port}`;
const dashboard = process.env.ADMIN_TOKEN
  ? `${api}/admin/queues   (any user name, password ${process.env.ADMIN_TOKEN})`
  : 'off (set ADMIN_TOKEN)';
console.log(`
  API docs       ${api}/docs
  Token          TOKEN=$(npx --yes pnpm@10.34.9 -s token acme)
  Try it         curl -H "Authorization: Bearer $TOKEN" ${api}/api/webhooks
  Portal         curl -s -X POST -H "Authorization: Bearer $TOKEN" ${api}/api/portal-sessions
                 then open ${api} followed by the "url" it returns (once: the link is one-time)
  Queues         ${dashboard}
  Metrics        ${api}/metrics   and the worker's   http://${host}:${workerPort}/metrics
  Local callbacks need CALLBACK_ALLOW_PRIVATE=true (development only).
`);

const { result } = concurrently(
  [
    { command: `node ${instrument} apps/api/dist/server.js`, name: 'api', prefixColor: 'cyan' },
    {
      command: `node ${instrument} apps/worker/dist/main.js`,
      name: 'worker',
      prefixColor: 'magenta',
      env: { WORKER_HEALTH_PORT: workerPort },
    },
  ],
  { killOthersOn: ['failure', 'success'], prefix: 'name' },
);
result.then(
  () => process.exit(0),
  () => process.exit(1),
);
