/** The account's subscriptions: status, kind, webhook_id, callback URL and health, 20 a page. */
import { useState } from 'preact/hooks';
import type { Subscription, WebhookClient } from '@webhooks/client';
import { useLoaded } from './api-call.js';
import { Badge, describeDestination, Failure, Loading, Time } from './parts.js';
import { href } from './route.js';

const pageSize = 20;

/** The list, with a link to create one and to each subscription's page. */
export function Subscriptions({ client }: { client: WebhookClient }) {
  const [page, setPage] = useState(1);
  const [loaded] = useLoaded(
    () => client.GET('/api/webhooks', { params: { query: { page, page_size: pageSize } } }),
    [client, page],
  );
  return (
    <section aria-labelledby="subscriptions-heading">
      <div class="title-row">
        <h2 id="subscriptions-heading">Subscriptions</h2>
        <a class="button primary" href={href({ page: 'new-subscription' })}>
          New subscription
        </a>
      </div>
      {loaded.state === 'loading' && <Loading what="your subscriptions" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' && loaded.data.count === 0 && (
        <p class="empty">
          No subscriptions yet. Create one to receive events at a callback URL of your application; the{' '}
          <a href={href({ page: 'catalogue' })}>event catalogue</a> lists what you can receive.
        </p>
      )}
      {loaded.state === 'ready' && loaded.data.count > 0 && (
        <>
          <ul class="cards">
            {loaded.data.results.map((subscription) => (
              <SubscriptionCard key={subscription.id} client={client} subscription={subscription} />
            ))}
          </ul>
          <Pager page={page} pageSize={pageSize} count={loaded.data.count} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function SubscriptionCard({ client, subscription }: { client: WebhookClient; subscription: Subscription }) {
  return (
    <li class="card">
      <a class="card-link" href={href({ page: 'subscription', id: subscription.id })}>
        <code class="callback">{subscription.callback_url}</code>
      </a>
      <SubscriptionFacts client={client} subscription={subscription} />
    </li>
  );
}

/** Status, pacing, kind, webhook_id, rate limit and health of a subscription, in one row. */
export function SubscriptionFacts({
  client,
  subscription,
}: {
  client: WebhookClient;
  subscription: Subscription;
}) {
  return (
    <div class="facts">
      <Badge status={subscription.status} />
      {subscription.delivery.state === 'throttled' && <Badge status="throttled" />}
      {subscription.delivery.breaker.retry_at !== null && (
        <span
          class="badge badge-failed"
          title="The callback kept failing: deliveries wait, using no attempts"
        >
          paused, next try <Time iso={subscription.delivery.breaker.retry_at} />
        </span>
      )}
      <span>{subscription.kind ?? 'every event type'}</span>
      {subscription.destination.type !== 'http' && (
        <span>{describeDestination(subscription.destination)}</span>
      )}
      {subscription.webhook_id && <span>webhook_id {subscription.webhook_id}</span>}
      {subscription.rate_limit !== null && <span>at most {subscription.rate_limit}/s</span>}
      <Health client={client} id={subscription.id} />
    </div>
  );
}

/** The success rate of the subscription's last 24 hours of deliveries. */
function Health({ client, id }: { client: WebhookClient; id: string }) {
  const [loaded] = useLoaded(
    () => client.GET('/api/webhooks/{id}/stats', { params: { path: { id } } }),
    [client, id],
  );
  if (loaded.state !== 'ready') return null;
  const { success_rate, succeeded, failed, pending } = loaded.data;
  if (success_rate === null)
    return <span class="muted">{pending > 0 ? `${pending} pending` : 'no deliveries in 24 h'}</span>;
  return (
    <span class={success_rate < 0.9 ? 'health-bad' : 'health-good'}>
      {Math.round(success_rate * 100)}% delivered in 24 h ({succeeded} of {succeeded + failed})
    </span>
  );
}

/** Previous/next page buttons for a list of `count` items. */
export function Pager({
  page,
  pageSize,
  count,
  onPage,
}: {
  page: number;
  pageSize: number;
  count: number;
  onPage: (page: number) => void;
}) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  if (pages === 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {pages}
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}
