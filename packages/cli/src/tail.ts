/**
 * `webhooks deliveries tail`: the account's deliveries as they happen, polling the events API, one
 * line each time a delivery's status or attempts change.
 */
import type { WebhookClient } from '@webhooks/client';
import { changed, deliveryLine, type DeliveryView } from './format.js';

export interface TailOptions {
  /** Print only deliveries in this status (`pending`, `succeeded`, `failed`, `cancelled`). */
  status?: string | undefined;
  /** Time between polls, in ms. */
  intervalMs: number;
  /** Events accepted from this time on are followed (default: when the tail starts). */
  since?: Date | undefined;
  /** Ends the tail. */
  signal: AbortSignal;
  /** Receives each line. */
  print(line: string): void;
}

/** Events whose deliveries may still change are followed at most this long, in ms. */
const followMs = 24 * 60 * 60 * 1000;

/**
 * Follows the account's deliveries until `signal` aborts.
 *
 * @throws Error with the API's problem title and detail when a poll is refused (401, 403, 429 after
 *   the client's retries); rejects with the network error when the API cannot be reached after them
 */
export async function tailDeliveries(client: WebhookClient, options: TailOptions): Promise<void> {
  const since = (options.since ?? new Date()).toISOString();
  const seen = new Map<string, string>();
  /** Events with a delivery not yet ended, and when each was first seen (ms). */
  const open = new Map<string, number>();
  const ended = new Set<string>();
  while (!options.signal.aborted) {
    // Newest first, read on until a known event, so a poll finding more than a page misses none.
    let before: string | undefined;
    for (;;) {
      const query = { since, page_size: 100, ...(before === undefined ? {} : { before }) };
      const listed = await client.GET('/api/events', { params: { query } });
      if (listed.error !== undefined) throw problemError(listed.error);
      const fresh = listed.data.results.filter((event) => !ended.has(event.id) && !open.has(event.id));
      for (const event of fresh) open.set(event.id, Date.now());
      if (fresh.length < listed.data.results.length || listed.data.next === null) break;
      before = listed.data.results.at(-1)!.id;
    }
    for (const [id, firstSeen] of open) {
      const detail = await client.GET('/api/events/{id}', { params: { path: { id } } });
      if (detail.error !== undefined) throw problemError(detail.error);
      const deliveries = (detail.data?.deliveries ?? []) as DeliveryView[];
      for (const delivery of deliveries) {
        if (!changed(seen, delivery)) continue;
        if (options.status === undefined || delivery.status === options.status)
          options.print(deliveryLine(detail.data!.type, delivery));
      }
      if (deliveries.every((d) => d.status !== 'pending') || Date.now() - firstSeen > followMs) {
        open.delete(id);
        ended.add(id);
      }
    }
    await sleep(options.intervalMs, options.signal);
  }
}

/** An Error carrying a problem details answer's title and detail. */
export function problemError(problem: { title?: string; detail?: string; status?: number }): Error {
  return new Error(
    [problem.title ?? `HTTP ${problem.status ?? '?'}`, problem.detail].filter(Boolean).join(': '),
  );
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
