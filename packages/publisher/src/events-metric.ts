/** `webhook_events_published_total{source}`: events accepted; `api` for `POST /api/events`, `publisher` otherwise. */
import { Counter, register as defaultRegistry, type Registry } from 'prom-client';

/** Where an event was published. */
export type EventSource = 'api' | 'publisher';

/** The counter on `registry` (prom-client's global by default), one per registry, shared by its publishers. */
export function eventsPublishedCounter(registry: Registry = defaultRegistry): Counter<'source'> {
  const name = 'webhook_events_published_total';
  return (
    (registry.getSingleMetric(name) as Counter<'source'> | undefined) ??
    new Counter({
      name,
      help: 'Events accepted for delivery (duplicates of an idempotency key excluded), by where they were published',
      labelNames: ['source'],
      registers: [registry],
    })
  );
}
