/**
 * One trace from publish to callback: with the OTEL_* variables asking for traces, an event
 * published through the API gives one trace whose spans come from both services (the API's
 * request and publish, the worker's fan-out and the attempt it sends inline, and the delivery job
 * that retries a failed one), collected here by the SDK's in-memory exporter. Events that share a
 * batch keep their own traces.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let stack: TestStack;
beforeAll(async () => {
  provider.register();
  stack = await startTestStack('tracing', { OTEL_TRACES_EXPORTER: 'otlp', DELIVERY_BACKOFF_MS: '100' });
});
afterAll(async () => {
  await stack.close();
  await provider.shutdown();
});

/** Publishes through the API to a new subscription of `account` at `path`; the event's id and the subscription's. */
async function publishTo(account: string, path: string) {
  const subscription = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
  const published = await stack.api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: stack.api.auth(account),
    payload: { type: 'call.started', data: { call_id: account } },
  });
  expect(published.statusCode).toBe(202);
  return { eventId: published.json().id as string, subscriptionId: subscription.id };
}

/** The finished attempt spans of `eventId`, once there are `count`. */
const attemptsOf = (eventId: string, count: number) =>
  waitFor(`${count} attempt span(s)`, () => {
    const spans = exporter
      .getFinishedSpans()
      .filter((span) => span.name === 'webhook attempt' && span.attributes['webhook.event_id'] === eventId);
    return spans.length === count && spans;
  });

/** A span as `<scope>: <name>`. */
const nameOf = (span: ReadableSpan) => `${span.instrumentationScope.name}: ${span.name}`;

/**
 * The finished spans of `span`'s trace, once they include every one of `names` (as {@link nameOf}
 * gives them): a span ends after those it waited for, the fan-out's after its inline attempt.
 */
const traceWith = (span: ReadableSpan, names: string[]) =>
  waitFor(`the trace's spans ${names.join(', ')}`, () => {
    const trace = exporter
      .getFinishedSpans()
      .filter((other) => other.spanContext().traceId === span.spanContext().traceId);
    return names.every((name) => trace.some((other) => nameOf(other) === name)) && trace;
  });

describe('tracing', () => {
  it('follows one event from POST /api/events through the fan-out to the attempt it sends', async () => {
    const { eventId, subscriptionId } = await publishTo('acct-trace', '/traced');
    const [attempt] = await attemptsOf(eventId, 1);
    expect(attempt!.attributes).toMatchObject({
      'webhook.subscription_id': subscriptionId,
      'http.response.status_code': 200,
    });
    const names = [
      '@fastify/otel: request',
      'webhooks-api: addBulk events',
      'webhooks-worker: process events',
      'webhooks-worker: webhook attempt',
    ];
    const trace = await traceWith(attempt!, names);
    const scopes = new Set(trace.map((span) => span.instrumentationScope.name));
    expect([...scopes]).toEqual(expect.arrayContaining(['@fastify/otel', 'webhooks-api', 'webhooks-worker']));
    expect(trace.map(nameOf)).toEqual(expect.arrayContaining(names));
  });

  it("keeps each account's event in its own trace when their publishes share a batch, and cuts callback URLs to scheme, host and path", async () => {
    const accounts = ['acct-trace-a', 'acct-trace-b'];
    for (const account of accounts)
      await stack.subscribe(account, {
        callback_url: `${stack.receiver.url}/${account}?token=${account}-secret`,
      });
    // Sent together, so that the API's publisher adds both jobs in one addBulk.
    const published = await Promise.all(
      accounts.map((account) =>
        stack.api.app.inject({
          method: 'POST',
          url: '/api/events',
          headers: stack.api.auth(account),
          payload: { type: 'call.started', data: { call_id: account } },
        }),
      ),
    );
    const attempts = await Promise.all(
      published.map(async (response) => (await attemptsOf(response.json().id, 1))[0]!),
    );
    const [a, b] = attempts.map((span) => span.spanContext().traceId);
    expect(a).not.toBe(b);
    expect(attempts.map((span) => span.attributes['url.full'])).toEqual(
      accounts.map((account) => `${stack.receiver.url}/${account}`),
    );
  });

  it("keeps a failed attempt's retry, sent by a delivery job, in the same trace", async () => {
    stack.receiver.script('/traced-retry', [500, 200]);
    const { eventId } = await publishTo('acct-trace-retry', '/traced-retry');
    const [first, second] = await attemptsOf(eventId, 2);
    expect(second!.spanContext().traceId).toBe(first!.spanContext().traceId);
    // The job carries its event's context itself; the `addBulk deliveries` span that stored it
    // serves the jobs of many events, of any account, so it belongs to none of their traces.
    const names = [
      'webhooks-api: addBulk events',
      'webhooks-worker: process events',
      'webhooks-worker: process deliveries',
    ];
    const trace = await traceWith(second!, names);
    expect(trace.map(nameOf)).toEqual(expect.arrayContaining(names));
    expect(trace.map(nameOf)).not.toContain('webhooks-worker: addBulk deliveries');
  });
});
