/**
 * The OpenTelemetry SDK of a service, loaded before it with `node --import` (so the ESM loader
 * hook sees `pg` and `ioredis` imported). It does nothing unless the `OTEL_*` variables ask for
 * traces ({@link tracingRequested}); then it exports them with pg's and ioredis's
 * instrumentations (a Redis span records its command, never its arguments). Node's http module is
 * not instrumented: callbacks are third parties, and no trace context reaches them. The loader
 * hook is import-in-the-middle's synchronous one where `module.registerHooks` exists (Node 26
 * deprecates `module.register`, DEP0205). With a ratio sampler the SDK takes the API's edge draw
 * (`edge-sampler.ts`), so an unsampled request runs with tracing suppressed.
 */
import { register } from 'node:module';
import { edgeSamplingOf } from './edge-sampling.js';
import { tracingRequested } from './tracing-env.js';

if (tracingRequested(process.env)) {
  const [loaderHook, { createAddHookMessageChannel }] = await Promise.all([
    import('import-in-the-middle/register-hooks.mjs'),
    import('import-in-the-middle'),
  ]);
  // Each instrumentation's Hook() sends the names of its modules (pg, pg-pool, ioredis) over this
  // channel, and the hook wraps those alone, not every module the service imports.
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
    // The SDK would otherwise also push OTLP metrics (OTEL_METRICS_EXPORTER defaults to otlp), and
    // the instrumentations would record histograms on every call for them: the services'
    // metrics are Prometheus's, on /metrics. Naming an exporter in OTEL_METRICS_EXPORTER still
    // turns the SDK's on.
    ...(process.env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(sampler === undefined ? {} : { sampler }),
    instrumentations: [
      // A query outside any request or job (a periodic task's) starts no trace of its own: alone,
      // it says nothing.
      new PgInstrumentation({ requireParentSpan: true }),
      // The command's name alone: its arguments carry event data (a publish's script is given the
      // job, payload included), and the default serializer records every argument of EVALSHA.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  // The instrumentations' modules are on the hook's list before the service imports them.
  await waitForAllMessagesAcknowledged();
  // Flushes the spans still buffered when the service stops.
  process.once('beforeExit', () => void sdk.shutdown());
}
