/**
 * Nothing of a trace reaches a callback: with tracing on in the worker (the real OpenTelemetry SDK
 * and its HTTP instrumentation, preloaded as the images start it, OTEL_PROPAGATORS asking for
 * baggage too), an event published in a traced context carrying baggage is delivered with no
 * `traceparent`, `tracestate` or `baggage` header.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, propagation, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { createEventPublisher, queueTelemetry, type EventPublisher } from '@webhooks/shared';
import { startTestApi, testEnv, type TestApi } from './support/api.js';
import { waitFor } from './support/wait.js';
import { instrumentPreload, spawnWorker, type WorkerProcess } from './support/worker-process.js';
import { startReceiver, type Receiver } from '../scripts/lib/receiver.js';

const provider = new NodeTracerProvider();
let api: TestApi;
let receiver: Receiver;
let publisher: EventPublisher;
let worker: WorkerProcess;

beforeAll(async () => {
  // This process propagates trace context and baggage into the job, as a traced publisher would.
  provider.register();
  api = await startTestApi('trace-context-privacy', { CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
  publisher = createEventPublisher({
    redis: api.config.redis,
    prefix: api.prefix,
    shards: api.config.QUEUE_SHARDS,
    catalogue: api.config.catalogue,
    telemetry: queueTelemetry(true, 'trace-context-privacy'),
  });
  worker = spawnWorker(
    testEnv(api.database.url, api.prefix, {
      CALLBACK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
      // Spans go to a port nothing listens on: the exporter's failures are its own, silent.
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_PROPAGATORS: 'tracecontext,baggage',
    }),
    ['--import', instrumentPreload],
  );
});
afterAll(async () => {
  worker.child.kill('SIGTERM');
  await worker.exited;
  await publisher.close();
  await receiver.close();
  await api.close();
  await provider.shutdown();
});

describe('a callback, with tracing on', () => {
  it('receives no trace context and no baggage', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: api.auth('acct-traced'),
      payload: { callback_url: `${receiver.url}/traced?token=client-secret` },
    });
    expect(response.statusCode).toBe(201);
    await waitFor('the worker to start', () => worker.output.join('').includes('worker started'), 30_000);

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
