/**
 * One trace from publish to callback: with the OTEL_* variables asking for traces, an event
 * published through the API gives one trace whose spans come from both services (the API's
 * request and publish, the worker's fan-out, delivery job and attempt), collected here by the
 * SDK's in-memory exporter.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from './support/wait.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let stack: TestStack;
beforeAll(async () => {
  provider.register();
  stack = await startTestStack('tracing', { OTEL_TRACES_EXPORTER: 'otlp' });
});
afterAll(async () => {
  await stack.close();
  await provider.shutdown();
});

describe('tracing', () => {
  it('follows one event from POST /api/events through the fan-out and the delivery to its attempt', async () => {
    const subscription = await stack.subscribe('acct-trace', {
      callback_url: `${stack.receiver.url}/traced`,
    });
    const published = await stack.api.app.inject({
      method: 'POST',
      url: '/api/events',
      headers: stack.api.auth('acct-trace'),
      payload: { type: 'call.started', data: { call_id: 'traced' } },
    });
    expect(published.statusCode).toBe(202);
    await waitFor('the attempt span', () =>
      exporter.getFinishedSpans().some((span) => span.name === 'webhook attempt'),
    );
    const attempt = exporter.getFinishedSpans().find((span) => span.name === 'webhook attempt')!;
    expect(attempt.attributes).toMatchObject({
      'webhook.event_id': published.json().id,
      'webhook.subscription_id': subscription.id,
      'http.response.status_code': 200,
    });
    const trace = exporter
      .getFinishedSpans()
      .filter((span) => span.spanContext().traceId === attempt.spanContext().traceId);
    const scopes = new Set(trace.map((span) => span.instrumentationScope.name));
    expect([...scopes]).toEqual(expect.arrayContaining(['@fastify/otel', 'webhooks-api', 'webhooks-worker']));
    const names = trace.map((span) => `${span.instrumentationScope.name}: ${span.name}`);
    expect(names).toEqual(
      expect.arrayContaining([
        '@fastify/otel: request',
        'webhooks-api: addBulk events',
        'webhooks-worker: process events',
        'webhooks-worker: addBulk deliveries',
        'webhooks-worker: webhook attempt',
      ]),
    );
  });
});
