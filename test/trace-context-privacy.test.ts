/**
 * Nothing of a trace reaches a callback: with tracing on in the worker (the real OpenTelemetry SDK,
 * preloaded as the images start it, OTEL_PROPAGATORS asking for
 * baggage too), an event published in a traced context carrying baggage is delivered with no
 * `traceparent`, `tracestate` or `baggage` header. The traces go to a collector, the spans of the
 * worker's PostgreSQL and Redis calls among them (the preload's loader hook wraps the modules the
 * instrumentations ask for), and no metrics do: the SDK's own default would push them too. Nor
 * does an event's data: the Redis spans of the API's publish record the command, not its
 * arguments. Sampling at a ratio is decided at the API's edge: a request that carries its
 * caller's sampled trace context is traced, one without is not (at a ratio of 0). A traced
 * service starts without a runtime warning (the SDK's ESM loader hook is one the runtime does not
 * deprecate).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, propagation, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { queueTelemetry } from '@webhooks/shared';
import { startProcessStack, type ProcessStack } from './support/process-stack.js';
import { testEnv } from './support/api.js';
import { startReceiver, type Receiver } from '../scripts/lib/receiver.js';
import { freePort, startService, waitUntilReady } from '../scripts/lib/services.js';
import { waitFor } from '../scripts/lib/wait.js';
import { instrumentPreload } from './support/worker-process.js';

const provider = new NodeTracerProvider();
let stack: ProcessStack;
let collector: Receiver;

beforeAll(async () => {
  // This process propagates trace context and baggage into the job, as a traced publisher would.
  provider.register();
  collector = await startReceiver();
  stack = await startProcessStack('trace-context-privacy', {
    telemetry: queueTelemetry(true, 'trace-context-privacy'),
    nodeArgs: ['--import', instrumentPreload],
    env: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_PROPAGATORS: 'tracecontext,baggage',
      // Metrics, were they on, would be pushed every 50 ms, and spans a second after they end.
      OTEL_METRIC_EXPORT_INTERVAL: '50',
      OTEL_BSP_SCHEDULE_DELAY: '1000',
    },
  });
});
afterAll(async () => {
  await stack.close();
  await provider.shutdown();
  await collector.close();
});

/**
 * Runs `test` against an API process of the stack's database and prefix, started as deployed with
 * the SDK preloaded, exporting to the collector as `env` adds to; stops it after.
 */
async function withTracedApi(env: Record<string, string>, test: (apiUrl: string) => Promise<void>) {
  const port = await freePort();
  const api = startService(
    'api',
    testEnv(stack.api.database.url, stack.api.prefix, {
      PORT: String(port),
      HOST: '127.0.0.1',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...env,
    }),
  );
  try {
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitUntilReady(apiUrl);
    await test(apiUrl);
  } finally {
    await api.stop();
  }
}

describe('a callback, with tracing on', () => {
  it('receives no trace context and no baggage', async () => {
    const { receiver, publisher } = stack;
    await stack.subscribe('acct-traced', { callback_url: `${receiver.url}/traced?token=client-secret` });
    await stack.started();

    const span = trace.getTracer('trace-context-privacy').startSpan('publish');
    const baggage = propagation.createBaggage({ tenant: { value: 'acct-traced-internal' } });
    const traced = propagation.setBaggage(trace.setSpan(context.active(), span), baggage);
    const { id } = await context.with(traced, () =>
      publisher.publish({ accountId: 'acct-traced', type: 'call.completed', data: { call_id: 'c' } }),
    );
    span.end();

    const [delivered] = await waitFor(
      'the delivery',
      () => receiver.requests.length > 0 && receiver.requests,
    );
    expect(delivered!.headers['webhook-id']).toBe(id);
    expect(
      Object.keys(delivered!.headers).filter((name) => /traceparent|tracestate|baggage/.test(name)),
    ).toEqual([]);
  });
});

describe('the trace backend, with tracing on', () => {
  it("receives the spans of the worker's PostgreSQL and Redis calls, and no metrics", async () => {
    // The preload's loader hook wraps the modules the instrumentations ask for (pg, ioredis), and
    // the services import those through it.
    const bodies = () => collector.at('/v1/traces').map((request) => request.body);
    await waitFor("the worker's pg and ioredis spans at the collector", () =>
      ['@opentelemetry/instrumentation-pg', '@opentelemetry/instrumentation-ioredis'].every((scope) =>
        bodies().some((body) => body.includes(scope)),
      ),
    );
    expect(collector.requests.map((request) => request.path)).not.toContain('/v1/metrics');
  });

  it("keeps a published event's data out of the API's spans", async () => {
    await withTracedApi({}, async (apiUrl) => {
      const published = await fetch(`${apiUrl}/api/events`, {
        method: 'POST',
        headers: { ...stack.api.auth('acct-traced'), 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'call.completed', data: { call_id: 'private-call-7f3a' } }),
      });
      expect(published.status).toBe(202);
      const exports = await waitFor("the publish's Redis spans at the collector", () => {
        const bodies = collector.at('/v1/traces').map((request) => request.body);
        return bodies.some((body) => body.includes('@fastify/otel') && body.includes('evalsha')) && bodies;
      });
      expect(exports.some((body) => body.includes('private-call-7f3a'))).toBe(false);
    });
  });
});

describe('a service, with tracing on', () => {
  it('starts without a runtime warning on its output', async () => {
    await stack.started();
    // Node prints its warnings as `(node:<pid>) [<code>] <Kind>Warning: ...`.
    expect(stack.worker.output.join('')).not.toMatch(/\(node:\d+\)[^\n]*Warning/);
  });
});

/** Publishes an event through the API at `apiUrl`, with `headers` added; expects 202. */
async function publishThrough(apiUrl: string, headers: Record<string, string>) {
  const response = await fetch(`${apiUrl}/api/events`, {
    method: 'POST',
    headers: { ...stack.api.auth('acct-traced'), 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ type: 'call.completed', data: { call_id: 'edge' } }),
  });
  expect(response.status).toBe(202);
}

/** A `traceparent` of a new trace its caller sampled, and that trace's id. */
function sampledTraceparent() {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

/** The spans `service` exported to the collector as JSON (the other services export protobuf). */
function spansOf(service: string): Array<{ traceId: string; name: string }> {
  return collector
    .at('/v1/traces')
    .filter((request) => String(request.headers['content-type']).startsWith('application/json'))
    .flatMap((request) => {
      const body = JSON.parse(request.body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<{ traceId: string; name: string }> }>;
        }>;
      };
      return body.resourceSpans
        .filter(({ resource }) =>
          resource.attributes.some(
            ({ key, value }) => key === 'service.name' && value.stringValue === service,
          ),
        )
        .flatMap(({ scopeSpans }) => scopeSpans.flatMap(({ spans }) => spans));
    });
}

/** The OTEL_* variables of an API named `service` sampling `ratio` of the traces, exporting JSON. */
const sampledAtEdge = (service: string, ratio: string) => ({
  OTEL_SERVICE_NAME: service,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: ratio,
});

describe('the API, sampling a ratio of the traces', () => {
  it('traces a request its caller sampled, and not one without trace context', async () => {
    await withTracedApi(sampledAtEdge('edge-sampled-api', '0'), async (apiUrl) => {
      await publishThrough(apiUrl, {});
      const { traceId, traceparent } = sampledTraceparent();
      await publishThrough(apiUrl, { traceparent });

      const traceIds = () => spansOf('edge-sampled-api').map((span) => span.traceId);
      await waitFor("the sampled request's spans", () => traceIds().includes(traceId));
      expect(new Set(traceIds())).toEqual(new Set([traceId]));
    });
  });

  it('traces a request it draws whole, and nothing of one it does not draw', async () => {
    await withTracedApi(sampledAtEdge('half-sampled-api', '0.5'), async (apiUrl) => {
      for (let i = 0; i < 40; i++) await publishThrough(apiUrl, {});
      // Its spans end after every earlier request's, and are exported with or after theirs.
      const { traceId, traceparent } = sampledTraceparent();
      await publishThrough(apiUrl, { traceparent });
      await waitFor("the last request's spans", () =>
        spansOf('half-sampled-api').some((span) => span.traceId === traceId && span.name === 'request'),
      );

      const traces = new Map<string, string[]>();
      for (const span of spansOf('half-sampled-api')) {
        traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span.name]);
      }
      // Some of the 40 were drawn and some not (each, one chance in 2⁴⁰ to fail), and every
      // exported trace is a request's: a request not drawn exports no span. (Whether @fastify/otel
      // skips it or makes spans that record nothing, which `ignorePaths` decides, is a cost the
      // collector cannot see.)
      expect(traces.size).toBeGreaterThan(1);
      expect(traces.size).toBeLessThan(41);
      for (const names of traces.values()) expect(names).toContain('request');
    });
  });
});
