/**
 * The API service's entry point: reads the configuration, listens on HOST:PORT, and on SIGTERM or
 * SIGINT stops accepting requests, finishes those in flight and closes its connections.
 */
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { redactedConfig } from '@webhooks/shared';
import { apiEnvSchema, loadApiConfig } from './config.js';

const config = loadApiConfig();
const app = await buildApp(config);

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'closing');
  await app.close();
});

await app.listen({ host: config.HOST, port: config.PORT });
if (app.operator !== app) await app.operator.listen({ host: config.HOST, port: config.ADMIN_PORT });
app.log.info(
  {
    config: redactedConfig(apiEnvSchema, config),
    redisMode: config.redis.mode,
    keyPrefix: config.keyPrefix,
    queueDashboard: config.ADMIN_TOKEN !== '',
  },
  'api started',
);
