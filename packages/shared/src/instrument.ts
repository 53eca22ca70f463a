/**
 * The OpenTelemetry SDK of a service, loaded before it with `node --import` (the way ESM modules
 * can be instrumented: the loader hook must see `pg`, `ioredis` and `http` being imported). It does
 * nothing unless the standard `OTEL_*` variables ask for traces ({@link tracingRequested}); then it
 * exports them as those variables say (OTLP by default, OTEL_EXPORTER_OTLP_ENDPOINT), with the
 * maintained instrumentations of http, pg and ioredis. OTEL_SERVICE_NAME names the service. It
 * exports no metrics unless OTEL_METRICS_EXPORTER names an exporter (the SDK's own default is
 * OTLP). A Redis span records its command's name, never its arguments (a publish's carry the
 * event's data).
 *
 * Callbacks belong to third parties, so nothing of a trace reaches them: outgoing HTTP requests
 * (only callback POSTs and verification challenges are made) are not instrumented, which also
 * keeps their URLs out of the trace backend; the worker's own `webhook attempt` span records each
 * with its URL cut to scheme, host and path. Only the W3C trace context propagates (W3C Trace
 * Context recommendation): `baggage` a client sends is ignored, whatever OTEL_PROPAGATORS says,
 * so no client's baggage rides along with work the service batches across accounts.
 */
import { register } from 'node:module';
import { tracingRequested } from './tracing-env.js';

if (tracingRequested(process.env)) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [
    { NodeSDK },
    { W3CTraceContextPropagator },
    { HttpInstrumentation },
    { PgInstrumentation },
    { IORedisInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/core'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
  ]);
  const sdk = new NodeSDK({
    textMapPropagator: new W3CTraceContextPropagator(),
    // The SDK would otherwise also push OTLP metrics (OTEL_METRICS_EXPORTER defaults to otlp), and
    // the http instrumentation would record a histogram per request for them: the services'
    // metrics are Prometheus's, on /metrics. Naming an exporter in OTEL_METRICS_EXPORTER still
    // turns the SDK's on.
    ...(process.env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    instrumentations: [
      new HttpInstrumentation({ disableOutgoingRequestInstrumentation: true }),
      new PgInstrumentation(),
      // The command's name alone: its arguments carry event data (a publish's script is given the
      // job, payload included), and the default serializer records every argument of EVALSHA.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  // Flushes the spans still buffered when the service stops.
  process.once('beforeExit', () => void sdk.shutdown());
}
