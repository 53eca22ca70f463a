/**
 * A service's OpenTelemetry SDK, loaded with `node --import` so the ESM hook sees `pg` and `ioredis`.
 * Idle unless `OTEL_*` asks for traces; then pg and ioredis are instrumented (Redis spans record the
 * command, never its arguments); http is not (callbacks are third parties). import-in-the-middle's
 * synchronous hook where `module.registerHooks` exists (DEP0205). A ratio sampler takes the edge draw.
 */
import { register } from 'node:module';
import { edgeSamplingOf } from './edge-sampling.js';
import { tracingRequested } from './tracing-env.js';

if (tracingRequested(process.env)) {
  const [loaderHook, { createAddHookMessageChannel }] = await Promise.all([
    import('import-in-the-middle/register-hooks.mjs'),
    import('import-in-the-middle'),
  ]);
  // Each instrumentation's Hook() names its modules here, and only those are wrapped.
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  if (loaderHook.supportsSyncHooks()) loaderHook.register(registerOptions.data);
  else register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, registerOptions);
  const [
    { NodeSDK },
    { W3CTraceContextPropagator },
    { PgInstrumentation },
    { IORedisInstrumentation },
    { edgeSampler },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/core'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('./edge-sampler.js'),
  ]);
  const sampling = edgeSamplingOf(process.env);
  const sampler = sampling === undefined ? undefined : edgeSampler(sampling);
  const sdk = new NodeSDK({
    textMapPropagator: new W3CTraceContextPropagator(),
    // No OTLP metrics (OTEL_METRICS_EXPORTER defaults to otlp): the metrics are Prometheus's; naming one turns it on.
    ...(process.env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(sampler === undefined ? {} : { sampler }),
    instrumentations: [
      // A query outside any request or job starts no trace: alone, it says nothing.
      new PgInstrumentation({ requireParentSpan: true }),
      // The command's name alone: EVALSHA's arguments carry event data.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  // The instrumentations' modules are on the hook's list before the service imports them.
  await waitForAllMessagesAcknowledged();
  // Flushes the spans still buffered when the service stops.
  process.once('beforeExit', () => void sdk.shutdown());
}
