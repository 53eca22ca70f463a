/** The portal's shell: navigation, and the page of the current route, or the session problem. */
import type { WebhookClient } from '@webhooks/client';
import { Catalogue } from './catalogue.js';
import { DeliveryPage } from './delivery.js';
import { EventPage, Events } from './events.js';
import { href, useRoute, type Route } from './route.js';
import { SubscriptionForm } from './subscription-form.js';
import { SubscriptionPage } from './subscription-page.js';
import { Subscriptions } from './subscriptions.js';

/**
 * The page: `client` acts with the session of the link, null when the page was opened without one
 * or its link could not be exchanged (`failure` says why).
 */
export function App({ client, failure }: { client: WebhookClient | null; failure?: string }) {
  const route = useRoute();
  const current = (page: Route['page'][]) => (page.includes(route.page) ? 'page' : undefined);
  return (
    <>
      <header>
        <h1>Webhooks</h1>
        {client !== null && (
          <nav aria-label="Portal">
            <a
              href={href({ page: 'subscriptions' })}
              aria-current={current(['subscriptions', 'subscription', 'delivery', 'new-subscription'])}
            >
              Subscriptions
            </a>
            <a href={href({ page: 'events' })} aria-current={current(['events', 'event'])}>
              Events
            </a>
            <a href={href({ page: 'catalogue' })} aria-current={current(['catalogue'])}>
              Event catalogue
            </a>
          </nav>
        )}
      </header>
      <main>
        {client === null ? (
          <section role="alert">
            <h2>No portal session</h2>
            <p>
              {failure ??
                'Open this page with the link your platform gives you; each link opens one session, once.'}
            </p>
          </section>
        ) : (
          <Page client={client} route={route} />
        )}
      </main>
    </>
  );
}

function Page({ client, route }: { client: WebhookClient; route: Route }) {
  switch (route.page) {
    case 'subscriptions':
      return <Subscriptions client={client} />;
    case 'new-subscription':
      return (
        <section aria-labelledby="new-heading">
          <p>
            <a href={href({ page: 'subscriptions' })}>← All subscriptions</a>
          </p>
          <h2 id="new-heading">New subscription</h2>
          <SubscriptionForm client={client} />
        </section>
      );
    case 'subscription':
      return <SubscriptionPage key={route.id} client={client} id={route.id} />;
    case 'delivery':
      return <DeliveryPage client={client} id={route.id} deliveryId={route.deliveryId} />;
    case 'catalogue':
      return <Catalogue client={client} />;
    case 'events':
      return <Events client={client} />;
    case 'event':
      return <EventPage key={route.id} client={client} id={route.id} />;
  }
}
