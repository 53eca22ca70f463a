// `pnpm start` (after setup): runs the API and one worker together, prefixed logs, and stops both
// when either exits or on Ctrl-C. Scale workers by starting more `node apps/worker/dist/main.js`.
import concurrently from 'concurrently';

// A local run is development unless told otherwise: production refuses the public development
// JWT secret and unencrypted signing secrets (docs/security.md).
process.env.NODE_ENV ??= 'development';

const host = process.env.HOST ?? '127.0.0.1';
const port = process.env.PORT ?? '3000';
console.log(`
  API         http://${host}:${port}   (OpenAPI: http://${host}:${port}/docs)
  Token       pnpm token <account-id>      e.g.  TOKEN=$(npx --yes pnpm@10.34.9 -s token acme)
  Try it      curl -H "Authorization: Bearer $TOKEN" http://${host}:${port}/api/webhooks
  Portal      curl -s -X POST -H "Authorization: Bearer $TOKEN" http://${host}:${port}/api/portal-sessions
              then open http://${host}:${port} followed by the "url" it returns
`);

const { result } = concurrently(
  [
    { command: 'node apps/api/dist/server.js', name: 'api', prefixColor: 'cyan' },
    { command: 'node apps/worker/dist/main.js', name: 'worker', prefixColor: 'magenta' },
  ],
  { killOthersOn: ['failure', 'success'], prefix: 'name' },
);
result.then(
  () => process.exit(0),
  () => process.exit(1),
);
