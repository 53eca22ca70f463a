/**
 * The event catalogue: every kind and type with an example payload, and how to verify a
 * delivery's signature with the `standardwebhooks` library (the Standard Webhooks specification).
 */
import type { WebhookClient } from '@webhooks/client';
import { useLoaded } from './api-call.js';
import { Failure, Json, Loading } from './parts.js';

/** A receiver that verifies before it trusts: the snippet the page shows. */
export const verificationSnippet = `import { Webhook } from 'standardwebhooks';

// The subscription's signing secret (whsec_…), kept out of your code.
const webhook = new Webhook(process.env.WEBHOOK_SECRET);

// body: the raw request body as a string, before any JSON parsing.
// headers: webhook-id, webhook-timestamp and webhook-signature.
app.post('/webhooks', (request, response) => {
  let payload;
  try {
    payload = webhook.verify(request.rawBody, request.headers);
  } catch {
    return response.status(400).end(); // not signed by us, or too old: ignore it
  }
  // Answer 200 quickly; anything else is retried. webhook-id is the same on every retry.
  response.status(200).end();
  handle(payload.type, payload.data);
});`;

/** The page. */
export function Catalogue({ client }: { client: WebhookClient }) {
  const [loaded] = useLoaded(() => client.GET('/api/event-types'), [client]);
  return (
    <section aria-labelledby="catalogue-heading">
      <h2 id="catalogue-heading">Event catalogue</h2>
      <p>
        Each delivery is a POST of a JSON payload: <code>timestamp</code>, <code>type</code>,{' '}
        <code>webhook_id</code> (when you gave one) and the event's <code>data</code>. A subscription receives
        every type of its kind, or the ones you choose.
      </p>
      <section class="panel" aria-labelledby="verify-heading">
        <h3 id="verify-heading">Verifying signatures</h3>
        <p>
          Deliveries are signed as the Standard Webhooks specification says. With its{' '}
          <code>standardwebhooks</code> library (npm, PyPI and others), or <code>verifyWebhook</code> of{' '}
          <code>@webhooks/client</code>:
        </p>
        <pre class="json" aria-label="Verification example" tabIndex={0}>
          {verificationSnippet}
        </pre>
      </section>
      {loaded.state === 'loading' && <Loading what="the catalogue" />}
      {loaded.state === 'failed' && <Failure>{loaded.failure}</Failure>}
      {loaded.state === 'ready' &&
        loaded.data.kinds.map((kind) => (
          <section class="panel" key={kind.kind} aria-labelledby={`kind-${kind.kind}`}>
            <h3 id={`kind-${kind.kind}`}>{kind.kind}</h3>
            <p>{kind.description}</p>
            {kind.event_types.map(({ type, description, deprecated, schema }) => (
              <details key={type}>
                <summary>
                  <code>{type}</code> {deprecated && <span class="badge">deprecated</span>} {description}
                </summary>
                <Json
                  label={`Example payload of ${type}`}
                  value={{ timestamp: '2026-11-21T09:30:00.000', type, data: kind.example_data[type] }}
                />
                {schema && <Json label={`JSON Schema of the data of ${type}`} value={schema} />}
              </details>
            ))}
          </section>
        ))}
    </section>
  );
}
