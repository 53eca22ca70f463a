/**
 * `webhooks listen`: deliveries brought to a local app through the service. It creates a `cli`
 * subscription, reads its deliveries as server-sent events, POSTs each signed to the local URL and
 * replies with the app's answer (only 200 confirms). The subscription is deleted when it stops.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { operations, WebhookClient } from '@webhooks/client';
import { problemError } from './tail.js';

/** One relayed delivery as the stream carries it (`RelayRequest` of the service). */
export interface RelayRequest {
  request_id: string;
  /** The signed payload, as the service would POST it. */
  body: string;
  headers: Record<string, string>;
}

/** The local app's answer, as the replies route takes it. */
export type RelayReply = operations['replyToRelayedDelivery']['requestBody']['content']['application/json'];

export interface ListenOptions {
  /** The API's address and the bearer token (the stream is read with fetch, not the client). */
  apiUrl: string;
  token: string;
  /** The local URL each delivery is POSTed to. */
  forwardTo: string;
  /** Event types to receive (wildcards allowed); all of the catalogue when undefined. */
  eventTypes?: string[] | undefined;
  /** How long the local app has to answer, in ms. */
  timeoutMs: number;
  /** Ends it (Ctrl-C). */
  signal: AbortSignal;
  print(line: string): void;
}

/** The answer's bytes kept for the reply (the delivery log keeps 4 KiB). */
const keptBytes = 4096;

/** Wait before reading the stream again after it broke, in ms. */
const reconnectMs = 1_000;

/** POSTs one relayed request to `url`; never throws, every failure is in the reply. */
export async function forward(url: string, request: RelayRequest, timeoutMs: number): Promise<RelayReply> {
  try {
    const answer = await fetch(url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await answer.text()).slice(0, keptBytes);
    return { request_id: request.request_id, status: answer.status, error: null, body };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const name = (error as Error).name;
    const kind =
      cause === 'ECONNREFUSED' ? 'connection_refused' : name === 'TimeoutError' ? 'timeout' : 'other';
    return { request_id: request.request_id, status: null, error: kind, body: null };
  }
}

/** One printed line per relayed delivery: time, type, webhook-id, the app's answer and `durationMs`. */
export function forwardedLine(
  request: RelayRequest,
  reply: RelayReply,
  durationMs: number,
  now = new Date(),
): string {
  let type = '?';
  try {
    type = String((JSON.parse(request.body) as { type?: unknown }).type ?? '?');
  } catch {
    // A transformed body need not be JSON.
  }
  const answer = reply.status === null ? `no answer (${reply.error ?? 'other'})` : String(reply.status);
  return `${now.toISOString()}  ${type}  ${request.headers['webhook-id'] ?? ''}  -> ${answer}  ${Math.round(durationMs)} ms`;
}

/**
 * Listens until `options.signal` aborts, then deletes its subscription.
 * @throws Error with the API's problem title and detail when the subscription or stream is refused (401, 404, 409)
 */
export async function listen(client: WebhookClient, options: ListenOptions): Promise<void> {
  const body = {
    destination: { type: 'cli' as const },
    ...(options.eventTypes === undefined ? {} : { event_types: options.eventTypes }),
  };
  const created = await client.POST('/api/webhooks', { body });
  if (created.error !== undefined) throw problemError(created.error);
  const { id, secret } = created.data;
  options.print(`Ready: forwarding to ${options.forwardTo} (subscription ${id}, signing secret ${secret})`);
  try {
    /** The last event read, so that a reconnect resumes after it (`Last-Event-ID`). */
    const cursor: { last?: string } = {};
    while (!options.signal.aborted) {
      let why = 'it ended';
      try {
        await readStream(client, id, cursor, options);
      } catch (error) {
        if (options.signal.aborted) break;
        if ((error as { fatal?: boolean }).fatal === true) throw error;
        why = (error as Error).message;
      }
      if (options.signal.aborted) break;
      options.print(`stream interrupted (${why}); reconnecting`);
      await new Promise((resolve) => setTimeout(resolve, reconnectMs));
    }
  } finally {
    await client.DELETE('/api/webhooks/{id}', { params: { path: { id } } });
    options.print(`stopped; subscription ${id} deleted`);
  }
}

/** Reads the stream until it ends, forwarding each delivery and noting its id in `cursor`. */
async function readStream(
  client: WebhookClient,
  id: string,
  cursor: { last?: string },
  options: ListenOptions,
): Promise<void> {
  const response = await fetch(new URL(`/api/webhooks/${id}/listen`, options.apiUrl), {
    headers: {
      authorization: `Bearer ${options.token}`,
      accept: 'text/event-stream',
      ...(cursor.last === undefined ? {} : { 'last-event-id': cursor.last }),
    },
    signal: options.signal,
  });
  if (!response.ok || response.body === null) {
    const problem = (await response.json().catch(() => ({}))) as { title?: string; detail?: string };
    throw Object.assign(problemError(problem), { fatal: response.status < 500 });
  }
  const deliveries: Array<{ id: string | undefined; request: RelayRequest }> = [];
  const parser = createParser({
    onEvent(event: EventSourceMessage) {
      if (event.event === 'delivery')
        deliveries.push({ id: event.id, request: JSON.parse(event.data) as RelayRequest });
    },
  });
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
    // One at a time, in the stream's order, as a local app is most often written to expect.
    for (const { id: eventId, request } of deliveries.splice(0)) {
      const started = performance.now();
      const reply = await forward(options.forwardTo, request, options.timeoutMs);
      options.print(forwardedLine(request, reply, performance.now() - started));
      const sent = await client.POST('/api/webhooks/{id}/listen/replies', {
        params: { path: { id } },
        body: reply,
      });
      if (sent.error !== undefined) options.print(`  reply not taken: ${problemError(sent.error).message}`);
      if (eventId !== undefined) cursor.last = eventId;
    }
  }
}
