/**
 * The delivery log of a subscription, newest first, 20 a page, filtered by status. It refreshes
 * itself every 2 s while a delivery on the page is pending or an event just sent has not appeared.
 */
import { useEffect, useState } from 'preact/hooks';
import type { WebhookClient } from '@webhooks/client';
import { outcome, useLoaded, useRefreshWhile } from './api-call.js';
import { Badge, Failure, Loading, Time } from './parts.js';
import { href } from './route.js';
import { Pager } from './subscriptions.js';

const pageSize = 20;
/** How often a list with something pending reloads, in ms. */
export const refreshMs = 2000;
const statuses = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
type Status = (typeof statuses)[number];

/**
 * The deliveries of subscription `id`. `awaitedEventId` is an event just sent to it: the list
 * keeps refreshing until that event's delivery shows.
 */
export function Deliveries({
  client,
  id,
  awaitedEventId,
}: {
  client: WebhookClient;
  id: string;
  awaitedEventId: string | null;
}) {
  const [status, setStatus] = useState<Status | ''>('');
  const [page, setPage] = useState(1);
  const [loaded, reload] = useLoaded(
    () =>
      client.GET('/api/webhooks/{id}/deliveries', {
        params: {
          path: { id },
          query: { page, page_size: pageSize, ...(status === '' ? {} : { status }) },
        },
      }),
    [client, id, page, status],
  );
  const results = loaded.state === 'ready' ? loaded.data.results : [];
  // The awaited event's delivery appears first on the unfiltered first page, and only there.
  const awaiting = awaitedEventId !== null && status === '' && page === 1;
  const waiting =
    results.some((delivery) => delivery.status === 'pending') ||
    (awaiting && !results.some((delivery) => delivery.event_id === awaitedEventId));
  useRefreshWhile(waiting, reload, refreshMs);
  useEffect(() => {
    if (awaitedEventId === null) return;
    setStatus('');
    setPage(1);
  }, [awaitedEventId]);

  return (
    <section class="panel" aria-labelledby="deliveries-heading">
      <div class="title-row">
        <h3 id="deliveries-heading">Deliveries</h3>
        <label class="inline">
          Status{' '}
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value as Status | '');
              setPage(1);
            }}
          >
            <option value="">All</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {waiting && loaded.state === 'ready' && (
        <p class="muted" role="status">
          Refreshing every {refreshMs / 1000} s while deliveries are pending…
        </p>
      )}
      {loaded.state === 'loading' && <Loading what="deliveries" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' && loaded.data.count === 0 && (
        <p class="empty">
          {status === ''
            ? 'No deliveries yet. Send a test event to see one arrive.'
            : `No ${status} deliveries.`}
        </p>
      )}
      {loaded.state === 'ready' && loaded.data.count > 0 && (
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Event type</th>
                <th scope="col">Created</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Next attempt</th>
              </tr>
            </thead>
            <tbody>
              {results.map((delivery) => (
                <tr key={delivery.id}>
                  <td>
                    <Badge status={delivery.status} />
                  </td>
                  <td>{delivery.type}</td>
                  <td>
                    <a href={href({ page: 'delivery', id, deliveryId: delivery.id })}>
                      <Time iso={delivery.created_at} />
                    </a>
                  </td>
                  <td>{delivery.attempts_made}</td>
                  <td>{delivery.last_status_code ?? delivery.last_error ?? '—'}</td>
                  <td>{delivery.next_attempt_at ? <Time iso={delivery.next_attempt_at} /> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {loaded.state === 'ready' && (
        <Pager page={page} pageSize={pageSize} count={loaded.data.count} onPage={setPage} />
      )}
      <Recover client={client} id={id} onRecovered={reload} />
    </section>
  );
}

/**
 * Longest `Retry-After` of a 429 the recovery waits out before asking again, in s: the pace's
 * windows are a second long at the default budget, and two minutes at the smallest.
 */
const maxPaceWaitSeconds = 120;

/** "Recover since": every failed or cancelled delivery created since a time is sent again. */
function Recover({
  client,
  id,
  onRecovered,
}: {
  client: WebhookClient;
  id: string;
  onRecovered: () => void;
}) {
  const [since, setSince] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  async function recover(event: Event) {
    event.preventDefault();
    const start = new Date(since);
    if (Number.isNaN(start.getTime())) {
      setMessage('Choose the date and time to recover from.');
      return;
    }
    // One call recovers what the account's pace leaves it; the answer says where the next one
    // starts, and a 429 when to ask.
    let sent = 0;
    let body: { since: string; until?: string; after?: string } = { since: start.toISOString() };
    for (;;) {
      const result = await outcome(
        client.POST('/api/webhooks/{id}/recover', { params: { path: { id } }, body }),
      );
      if (
        !result.ok &&
        result.status === 429 &&
        (result.retryAfterSeconds ?? Infinity) <= maxPaceWaitSeconds
      ) {
        setMessage(`${sent} sent again so far; the rest follow at your account's pace…`);
        await new Promise((resolve) => setTimeout(resolve, result.retryAfterSeconds! * 1000));
        continue;
      }
      if (!result.ok) {
        setMessage(sent === 0 ? result.failure : `${sent} sent again, then: ${result.failure}`);
        break;
      }
      sent += result.data.count;
      if (result.data.continue_after === null) {
        setMessage(`${sent} failed or cancelled ${sent === 1 ? 'delivery' : 'deliveries'} sent again.`);
        break;
      }
      body = { ...body, until: result.data.until, after: result.data.continue_after };
    }
    if (sent > 0) onRecovered();
  }
  return (
    <form class="recover" onSubmit={recover}>
      <label for="recover-since">Recover failed deliveries since</label>
      <input
        id="recover-since"
        type="datetime-local"
        value={since}
        onInput={(e) => setSince(e.currentTarget.value)}
      />
      <button type="submit">Recover</button>
      {message && <p role="status">{message}</p>}
    </form>
  );
}
