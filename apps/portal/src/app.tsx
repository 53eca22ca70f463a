/** The portal's shell: a session problem, or the subscriptions of the account. */
import type { WebhookClient } from '@webhooks/client';
import { Subscriptions } from './subscriptions.js';

/** The page: `client` acts with the session of the link, null when the page was opened without one. */
export function App({ client }: { client: WebhookClient | null }) {
  return (
    <>
      <header>
        <h1>Webhooks</h1>
      </header>
      <main>
        {client === null ? (
          <section role="alert">
            <h2>No portal session</h2>
            <p>
              Open this page with the link your platform gives you; it carries a session that lasts one hour.
            </p>
          </section>
        ) : (
          <Subscriptions client={client} />
        )}
      </main>
    </>
  );
}
