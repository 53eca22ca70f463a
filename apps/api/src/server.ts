/**
 * The API's entry point: reads the configuration (a refused one: one line on stderr, exit 1), warms the
 * publish path (`warm-up.ts`), listens on HOST:PORT, and on SIGTERM or SIGINT finishes requests in
 * flight and closes its connections. Running out of descriptors does not end it (`lib/descriptors.ts`).
 */
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { warmUp } from './warm-up.js';
import { configErrorLine, redactedConfig } from '@webhooks/shared';
import { apiEnvSchema, loadApiConfig, type ApiConfig } from './config.js';

/** The configuration; a refused one stops the service with one line naming the variable. */
function configOrExit(): ApiConfig {
  try {
    return loadApiConfig();
  } catch (error) {
    const line = configErrorLine('api', error);
    if (line === null) throw error;
    console.error(line);
    process.exit(1);
  }
}

const config = configOrExit();
const app = await buildApp(config);

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'closing');
  await app.close();
});

const warmed = await warmUp(app, config);
await app.listen({ host: config.HOST, port: config.PORT });
if (app.operator !== app) await app.operator.listen({ host: config.HOST, port: config.ADMIN_PORT });
app.log.info(
  {
    config: redactedConfig(apiEnvSchema, config),
    redisMode: config.redis.mode,
    keyPrefix: config.keyPrefix,
    queueDashboard: config.ADMIN_TOKEN !== '',
    warmUpPublishes: warmed,
  },
  'api started',
);
