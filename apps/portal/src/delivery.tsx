/**
 * One delivery: the payload sent, every attempt (time, duration, status code, error, response
 * body), the next attempt, and a retry of a failed or cancelled one. Refreshes while pending.
 */
import { useState } from 'preact/hooks';
import type { WebhookClient } from '@webhooks/client';
import { outcome, useLoaded, useRefreshWhile } from './api-call.js';
import { refreshMs } from './deliveries.js';
import { Badge, Failure, Json, Loading, Time } from './parts.js';
import { href } from './route.js';

/** The page of delivery `deliveryId` of subscription `id`. */
export function DeliveryPage({
  client,
  id,
  deliveryId,
}: {
  client: WebhookClient;
  id: string;
  deliveryId: string;
}) {
  const [loaded, reload] = useLoaded(
    () =>
      client.GET('/api/webhooks/{id}/deliveries/{delivery_id}', {
        params: { path: { id, delivery_id: deliveryId } },
      }),
    [client, id, deliveryId],
  );
  const [message, setMessage] = useState<string | null>(null);
  const pending = loaded.state === 'ready' && loaded.data.status === 'pending';
  useRefreshWhile(pending, reload, refreshMs);

  async function retry() {
    const result = await outcome(
      client.POST('/api/webhooks/{id}/deliveries/{delivery_id}/retry', {
        params: { path: { id, delivery_id: deliveryId } },
      }),
    );
    setMessage(result.ok ? 'Retrying: a fresh round of attempts has started.' : result.failure);
    await reload();
  }

  return (
    <section aria-labelledby="delivery-heading">
      <p>
        <a href={href({ page: 'subscription', id })}>← Back to the subscription</a>
      </p>
      <h2 id="delivery-heading">Delivery</h2>
      {loaded.state === 'loading' && <Loading what="the delivery" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' && (
        <>
          <dl class="facts-list">
            <dt>Status</dt>
            <dd>
              <Badge status={loaded.data.status} />
            </dd>
            <dt>Event type</dt>
            <dd>{loaded.data.type}</dd>
            <dt>Event id (webhook-id header)</dt>
            <dd>
              <code>{loaded.data.event_id}</code>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={loaded.data.created_at} />
            </dd>
            <dt>Next attempt</dt>
            <dd>{loaded.data.next_attempt_at ? <Time iso={loaded.data.next_attempt_at} /> : 'none'}</dd>
          </dl>
          {(loaded.data.status === 'failed' || loaded.data.status === 'cancelled') && (
            <div class="actions">
              <button class="primary" type="button" onClick={retry}>
                Retry delivery
              </button>
            </div>
          )}
          {message && <p role="status">{message}</p>}
          <h3>Payload</h3>
          {loaded.data.payload_expunged ? (
            <p class="muted">The event's payload was expunged; what was sent is no longer kept.</p>
          ) : (
            <Json value={loaded.data.payload} label="Payload" />
          )}
          <h3>Attempts</h3>
          {loaded.data.attempts.length === 0 ? (
            <p class="empty">No attempt yet.</p>
          ) : (
            <ol class="attempts">
              {loaded.data.attempts.map((attempt) => (
                <li key={attempt.attempt_number} class="card">
                  <div class="facts">
                    <strong>Attempt {attempt.attempt_number}</strong>
                    <Time iso={attempt.started_at} />
                    <span>{attempt.duration_ms} ms</span>
                    {/* A broker's acknowledgement confirms with no status code. */}
                    <span class={attempt.error === null ? 'health-good' : 'health-bad'}>
                      {attempt.status_code !== null
                        ? `HTTP ${attempt.status_code}`
                        : attempt.error === null
                          ? 'acknowledged'
                          : 'no answer'}
                    </span>
                    {attempt.error && (
                      <span>
                        {attempt.error}
                        {attempt.error_message && `: ${attempt.error_message}`}
                      </span>
                    )}
                  </div>
                  {attempt.response_body !== null && attempt.response_body !== '' && (
                    <pre
                      class="json"
                      aria-label={`Response body of attempt ${attempt.attempt_number}`}
                      tabIndex={0}
                    >
                      {attempt.response_body}
                    </pre>
                  )}
                </li>
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
