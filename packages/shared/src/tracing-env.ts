/** When tracing is on: read from the standard `OTEL_*` variables, with no import of the libraries it traces. */

/**
 * Whether the environment asks for traces: OTEL_TRACES_EXPORTER set (and not `none`), or an OTLP
 * endpoint set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); never with
 * OTEL_SDK_DISABLED=true (the OpenTelemetry SDK environment specification).
 */
export function tracingRequested(env: Record<string, string | undefined>): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(
    env.OTEL_TRACES_EXPORTER || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
}
