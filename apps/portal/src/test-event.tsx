/** Sending a test event: the catalogue's example of a type, to this subscription only. */
import { useState } from 'preact/hooks';
import type { Subscription, WebhookClient } from '@webhooks/client';
import { outcome } from './api-call.js';

/** The form; `onSent` receives the event id, whose delivery the list then waits for. */
export function TestEvent({
  client,
  subscription,
  onSent,
}: {
  client: WebhookClient;
  subscription: Subscription;
  onSent: (eventId: string) => void;
}) {
  const [type, setType] = useState(subscription.event_types[0] ?? '');
  const [message, setMessage] = useState<string | null>(null);
  async function send(event: Event) {
    event.preventDefault();
    const result = await outcome(
      client.POST('/api/webhooks/{id}/test-events', {
        params: { path: { id: subscription.id } },
        body: { type },
      }),
    );
    setMessage(result.ok ? `Test event ${type} sent; its delivery appears below.` : result.failure);
    if (result.ok) onSent(result.data.id);
  }
  return (
    <section class="panel" aria-labelledby="test-heading">
      <h3 id="test-heading">Send a test event</h3>
      <form class="inline-form" onSubmit={send}>
        <label for="test-type">Event type</label>
        <select id="test-type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {subscription.event_types.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <button class="primary" type="submit" disabled={subscription.status !== 'active'}>
          Send test event
        </button>
      </form>
      {subscription.status !== 'active' && <p class="hint">Enable the subscription to send it events.</p>}
      {message && <p role="status">{message}</p>}
    </section>
  );
}
