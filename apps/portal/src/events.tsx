/**
 * The account's events, newest first, and one event with where it went: its delivery to each
 * subscription, linked to that subscription's delivery log. Answers "did event X go out, and
 * where?" without knowing the subscription. An event whose payload was expunged says so.
 */
import { useState } from 'preact/hooks';
import type { WebhookClient } from '@webhooks/client';
import { useLoaded, useRefreshWhile } from './api-call.js';
import { refreshMs } from './deliveries.js';
import { Badge, Failure, Json, Loading, Time } from './parts.js';
import { href } from './route.js';
import { Pager } from './subscriptions.js';

const pageSize = 20;

/** The event list, filtered by one event type. */
export function Events({ client }: { client: WebhookClient }) {
  const [type, setType] = useState('');
  const [page, setPage] = useState(1);
  const [loaded] = useLoaded(
    () =>
      client.GET('/api/events', {
        params: {
          query: { page, page_size: pageSize, ...(type.trim() === '' ? {} : { event_type: type.trim() }) },
        },
      }),
    [client, page, type],
  );
  return (
    <section aria-labelledby="events-heading">
      <div class="title-row">
        <h2 id="events-heading">Events</h2>
        <label class="inline">
          Event type{' '}
          <input
            type="text"
            value={type}
            placeholder="call.completed"
            onChange={(e) => {
              setType(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
      </div>
      {loaded.state === 'loading' && <Loading what="events" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' && loaded.data.count === 0 && (
        <p class="empty">No events yet: an event appears here once it went to one of your subscriptions.</p>
      )}
      {loaded.state === 'ready' && loaded.data.count > 0 && (
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Accepted</th>
              </tr>
            </thead>
            <tbody>
              {loaded.data.results.map((event) => (
                <tr key={event.id}>
                  <td>
                    <a href={href({ page: 'event', id: event.id })}>
                      <code>{event.id}</code>
                    </a>
                  </td>
                  <td>
                    {event.type}
                    {event.payload_expunged && <span class="muted"> (payload expunged)</span>}
                  </td>
                  <td>
                    <Time iso={event.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {loaded.state === 'ready' && (
        <Pager page={page} pageSize={pageSize} count={loaded.data.count} onPage={setPage} />
      )}
    </section>
  );
}

/** One event: its data and its delivery to each subscription, refreshed while one is pending. */
export function EventPage({ client, id }: { client: WebhookClient; id: string }) {
  const [loaded, reload] = useLoaded(
    () => client.GET('/api/events/{id}', { params: { path: { id } } }),
    [client, id],
  );
  const pending = loaded.state === 'ready' && loaded.data.deliveries.some((d) => d.status === 'pending');
  useRefreshWhile(pending, reload, refreshMs);
  return (
    <section aria-labelledby="event-heading">
      <p>
        <a href={href({ page: 'events' })}>← All events</a>
      </p>
      <h2 id="event-heading">Event {id}</h2>
      {loaded.state === 'loading' && <Loading what="the event" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' && (
        <>
          <p>
            {loaded.data.type}, accepted <Time iso={loaded.data.created_at} />
          </p>
          {loaded.data.payload_expunged ? (
            <p class="muted">Its payload was expunged; the deliveries below stay in the log.</p>
          ) : (
            <Json value={loaded.data.data} label="Event data" />
          )}
          <h3>Where it went</h3>
          <div class="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Subscription</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                </tr>
              </thead>
              <tbody>
                {loaded.data.deliveries.map((delivery) => (
                  <tr key={delivery.id}>
                    <td>
                      <a
                        href={href({
                          page: 'delivery',
                          id: delivery.subscription.id,
                          deliveryId: delivery.id,
                        })}
                      >
                        <code>{delivery.subscription.id}</code>
                      </a>
                    </td>
                    <td>
                      <Badge status={delivery.status} />
                    </td>
                    <td>{delivery.attempts_made}</td>
                    <td>{delivery.last_status_code ?? delivery.last_error ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
