/**
 * `webhook_events_published_total{source}`: events accepted for delivery, counted by
 * the publisher that accepted them, `api` for `POST /api/events`, `publisher` for internal services
 * using {@link createEventPublisher} in their own process.
 */
import { Counter, register as defaultRegistry, type Registry } from 'prom-client';

/** Where an event was published. */
export type EventSource = 'api' | 'publisher';

/**
 * The counter on `registry` (prom-client's global registry by default), created once per registry:
 * every publisher of a process shares it.
 */
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
