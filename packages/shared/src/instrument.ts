/**
 * The OpenTelemetry SDK of a service, loaded before it with `node --import` (the way ESM modules
 * can be instrumented: the loader hook must see `pg` and `ioredis` being imported). It does
 * nothing unless the standard `OTEL_*` variables ask for traces ({@link tracingRequested}); then it
 * exports them as those variables say (OTLP by default, OTEL_EXPORTER_OTLP_ENDPOINT), with the
 * maintained instrumentations of pg and ioredis. The API's requests are traced by `@fastify/otel`
 * (its request span is the server span). OTEL_SERVICE_NAME names the service. It
 * exports no metrics unless OTEL_METRICS_EXPORTER names an exporter (the SDK's own default is
 * OTLP). A Redis span records its command's name, never its arguments (a publish's carry the
 * event's data).
 *
 * Node's http module is not instrumented. Callbacks belong to third parties, so nothing of a trace
 * reaches them: outgoing HTTP requests (only callback POSTs and verification challenges are made)
 * carry no trace context, and their URLs stay out of the trace backend; the worker's own
 * `webhook attempt` span records each with its URL cut to scheme, host and path. Only the W3C
 * trace context propagates (W3C Trace Context recommendation): `baggage` a client sends is
 * ignored, whatever OTEL_PROPAGATORS says, so no client's baggage rides along with work the
 * service batches across accounts.
 *
 * The incoming side of the http instrumentation, alone, cost about as much as all of tracing's
 * instrumentations together, in every request, sampled or not: it binds the request and the
 * response to the trace context, which slows every later access to them.
 *
 * The ESM loader hook that lets the instrumentations see those imports is import-in-the-middle's
 * synchronous one (`module.registerHooks`, in the service's own thread) where the runtime supports
 * it (`supportsSyncHooks`: Node 22.22.3, 24.11.1, 25.1.0 and later in each line, and 26, the
 * images' runtime), and the asynchronous `module.register` one elsewhere (Node 20): Node 26
 * deprecates `module.register` (DEP0205) and warned on every start of a traced service. Either
 * wraps only the modules the instrumentations hook (import-in-the-middle's
 * `createAddHookMessageChannel`, as the OpenTelemetry JS ESM guide shows).
 *
 * When OTEL_TRACES_SAMPLER samples a ratio of the traces, the API draws for a request without
 * trace context at its edge (`edge-sampling-hook.ts`) and the SDK takes that draw
 * (`edge-sampler.ts`): a request not sampled runs with tracing suppressed, so the instrumentations
 * skip it instead of doing their work for spans that record nothing.
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
  // channel, and the hook wraps those alone: wrapping every module the service imports read and
  // parsed each one's source again, and a traced API took 30-40% longer to start.
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
