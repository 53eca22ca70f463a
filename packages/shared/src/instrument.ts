/**
 * The OpenTelemetry SDK of a service, loaded before it with `node --import` (the way ESM modules
 * can be instrumented: the loader hook must see `pg`, `ioredis` and `http` being imported). It does
 * nothing unless the standard `OTEL_*` variables ask for traces ({@link tracingRequested}); then it
 * exports them as those variables say (OTLP by default, OTEL_EXPORTER_OTLP_ENDPOINT), with the
 * maintained instrumentations of http, pg and ioredis. OTEL_SERVICE_NAME names the service.
 */
import { register } from 'node:module';
import { tracingRequested } from './tracing-env.js';

if (tracingRequested(process.env)) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { HttpInstrumentation }, { PgInstrumentation }, { IORedisInstrumentation }] =
    await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-ioredis'),
    ]);
  const sdk = new NodeSDK({
    instrumentations: [new HttpInstrumentation(), new PgInstrumentation(), new IORedisInstrumentation()],
  });
  sdk.start();
  // Flushes the spans still buffered when the service stops.
  process.once('beforeExit', () => void sdk.shutdown());
}
