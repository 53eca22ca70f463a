/**
 * One subscription: its facts and health, editing, disabling or enabling, deleting (after a
 * confirmation), its signing secret, test events and its deliveries.
 */
import { useState } from 'preact/hooks';
import type { WebhookClient } from '@webhooks/client';
import { outcome, useLoaded } from './api-call.js';
import { Deliveries } from './deliveries.js';
import { Confirm, Failure, Loading } from './parts.js';
import { href, navigate } from './route.js';
import { SigningSecret } from './signing-secret.js';
import { SubscriptionForm } from './subscription-form.js';
import { HealthPanel } from './health-panel.js';
import { SubscriptionFacts } from './subscriptions.js';
import { TestEvent } from './test-event.js';

/** The page of subscription `id`. */
export function SubscriptionPage({ client, id }: { client: WebhookClient; id: string }) {
  const [loaded, reload] = useLoaded(
    () => client.GET('/api/webhooks/{id}', { params: { path: { id } } }),
    [client, id],
  );
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [awaitedEventId, setAwaitedEventId] = useState<string | null>(null);

  if (loaded.state === 'loading') return <Loading what="the subscription" />;
  if (loaded.state === 'failed') return <Failure>{loaded.failure}</Failure>;
  const subscription = loaded.data;

  async function setStatus(status: 'active' | 'disabled') {
    const result = await outcome(
      client.PUT('/api/webhooks/{id}', { params: { path: { id } }, body: { status } }),
    );
    setMessage(
      result.ok
        ? status === 'active'
          ? 'Enabled: new events are delivered again.'
          : 'Disabled: no events are delivered until you enable it.'
        : result.failure,
    );
    await reload();
  }
  async function remove() {
    const result = await outcome(client.DELETE('/api/webhooks/{id}', { params: { path: { id } } }));
    if (result.ok) navigate({ page: 'subscriptions' });
    else setMessage(result.failure);
  }

  return (
    <section aria-labelledby="subscription-heading">
      <p>
        <a href={href({ page: 'subscriptions' })}>← All subscriptions</a>
      </p>
      <h2 id="subscription-heading" class="callback">
        {subscription.callback_url}
      </h2>
      <SubscriptionFacts client={client} subscription={subscription} />
      <HealthPanel client={client} subscription={subscription} />
      {message && <p role="status">{message}</p>}
      {editing ? (
        <section class="panel" aria-labelledby="edit-heading">
          <h3 id="edit-heading">Edit subscription</h3>
          <SubscriptionForm
            client={client}
            subscription={subscription}
            onSaved={() => {
              setEditing(false);
              setMessage('Changes saved.');
              void reload();
            }}
            onCancel={() => setEditing(false)}
          />
        </section>
      ) : (
        <div class="actions">
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
          {subscription.status === 'active' ? (
            <button type="button" onClick={() => setStatus('disabled')}>
              Disable
            </button>
          ) : (
            <button class="primary" type="button" onClick={() => setStatus('active')}>
              Enable
            </button>
          )}
          <button class="danger" type="button" onClick={() => setDeleting(true)}>
            Delete…
          </button>
        </div>
      )}
      {deleting && (
        <Confirm
          id="delete-question"
          question="Delete this subscription? Its deliveries and their log are deleted with it, and no more events are sent to this callback URL."
          confirm="Delete subscription"
          keep="Keep it"
          onConfirm={remove}
          onKeep={() => setDeleting(false)}
        />
      )}
      <SigningSecret client={client} id={id} />
      <TestEvent client={client} subscription={subscription} onSent={setAwaitedEventId} />
      <Deliveries client={client} id={id} awaitedEventId={awaitedEventId} />
    </section>
  );
}
