/** The account's subscriptions: status, kind, webhook_id, callback URL and pacing. */
import { useEffect, useState } from 'preact/hooks';
import type { Subscription, WebhookClient } from '@webhooks/client';
import { describeFailure } from './failure.js';

type State =
  { loading: true } | { loading: false; subscriptions: Subscription[] } | { loading: false; failure: string };

/** Loads the account's subscriptions (first 100) through `client` and shows them, or what went wrong. */
export function Subscriptions({ client }: { client: WebhookClient }) {
  const [state, setState] = useState<State>({ loading: true });
  useEffect(() => {
    client
      .GET('/api/webhooks', { params: { query: { page_size: 100 } } })
      .then(({ data, error, response }) =>
        setState(
          data
            ? { loading: false, subscriptions: data.results }
            : { loading: false, failure: describeFailure(response.status, error) },
        ),
      )
      .catch(() => setState({ loading: false, failure: describeFailure(0, undefined) }));
  }, [client]);

  if (state.loading) return <p aria-busy="true">Loading your subscriptions…</p>;
  if ('failure' in state) {
    return (
      <section role="alert">
        <h2>Something went wrong</h2>
        <p>{state.failure}</p>
      </section>
    );
  }
  return (
    <section aria-labelledby="subscriptions-heading">
      <h2 id="subscriptions-heading">Subscriptions</h2>
      {state.subscriptions.length === 0 ? (
        <p>No subscriptions yet. Create one to receive events at a callback URL of your application.</p>
      ) : (
        <ul class="subscriptions">
          {state.subscriptions.map((subscription) => (
            <li key={subscription.id}>
              <span class={`status status-${subscription.status}`}>{subscription.status}</span>
              <code class="callback">{subscription.callback_url}</code>
              <span>{subscription.kind ?? 'every event type'}</span>
              {subscription.webhook_id && <span>webhook_id {subscription.webhook_id}</span>}
              {subscription.delivery.state === 'throttled' && (
                <span class="status status-throttled">throttled</span>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
