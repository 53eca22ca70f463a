/**
 * Creating and editing a subscription. The API validates; its problem details name each invalid
 * field by JSON pointer, and the error is shown next to that field (RFC 9457 `errors`).
 */
import { useState } from 'preact/hooks';
import type { Problem, Subscription, WebhookClient } from '@webhooks/client';
import { fieldError, outcome } from './api-call.js';
import { navigate } from './route.js';

/** The kinds a subscription can be limited to, as the create endpoints name them. */
const kindEndpoints = {
  '': '/api/webhooks',
  calls: '/api/webhooks/calls',
  messages: '/api/webhooks/messages',
  operational: '/api/webhooks/operational',
} as const;
type KindChoice = keyof typeof kindEndpoints;

/** One labelled input with its error, linked for screen readers. */
function Field({
  id,
  label,
  hint,
  error,
  children,
}: {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  children: (attributes: Record<string, unknown>) => preact.JSX.Element;
}) {
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
      {children({
        id,
        'aria-invalid': error ? 'true' : undefined,
        'aria-describedby': described || undefined,
      })}
      {error && (
        <p id={`${id}-error`} class="field-error">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * The form: creates a subscription when `subscription` is absent (then goes to its page), edits
 * it otherwise (then calls `onSaved` with the updated resource).
 */
export function SubscriptionForm({
  client,
  subscription,
  onSaved,
  onCancel,
}: {
  client: WebhookClient;
  subscription?: Subscription;
  onSaved?: (subscription: Subscription) => void;
  onCancel?: () => void;
}) {
  const [kind, setKind] = useState<KindChoice>('');
  const [callbackUrl, setCallbackUrl] = useState(subscription?.callback_url ?? '');
  const [webhookId, setWebhookId] = useState(subscription?.webhook_id ?? '');
  const [rateLimit, setRateLimit] = useState(subscription?.rate_limit?.toString() ?? '');
  const [problem, setProblem] = useState<Problem | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    const limit = rateLimit.trim() === '' ? null : Number(rateLimit);
    const result = subscription
      ? await outcome(
          client.PUT('/api/webhooks/{id}', {
            params: { path: { id: subscription.id } },
            body: {
              callback_url: callbackUrl,
              webhook_id: webhookId === '' ? null : webhookId,
              rate_limit: limit,
            },
          }),
        )
      : await outcome(
          client.POST(kindEndpoints[kind], {
            body: {
              callback_url: callbackUrl,
              ...(webhookId === '' ? {} : { webhook_id: webhookId }),
              ...(limit === null ? {} : { rate_limit: limit }),
            },
          }),
        );
    setBusy(false);
    if (result.ok) {
      if (subscription) onSaved?.(result.data);
      else navigate({ page: 'subscription', id: result.data.id });
      return;
    }
    setProblem(result.problem);
    setFailure(result.problem?.errors?.length ? 'Check the fields marked below.' : result.failure);
  }

  return (
    <form class="form" onSubmit={submit} noValidate>
      {failure && (
        <p class="form-error" role="alert">
          {failure}
        </p>
      )}
      {!subscription && (
        <Field
          id="kind"
          label="Events"
          hint="Which events this callback receives. A kind can't be changed later; create another subscription instead."
          error={fieldError(problem, '/kind')}
        >
          {(attributes) => (
            <select
              {...attributes}
              value={kind}
              onChange={(e) => setKind(e.currentTarget.value as KindChoice)}
            >
              <option value="">Every event type</option>
              <option value="calls">Calls only</option>
              <option value="messages">Messages only</option>
              <option value="operational">Operational only</option>
            </select>
          )}
        </Field>
      )}
      <Field
        id="callback_url"
        label="Callback URL"
        hint="An absolute https URL in your application; it must answer 200 to confirm a delivery."
        error={fieldError(problem, '/callback_url')}
      >
        {(attributes) => (
          <input
            {...attributes}
            type="url"
            required
            value={callbackUrl}
            placeholder="https://app.example/webhooks"
            onInput={(e) => setCallbackUrl(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        id="webhook_id"
        label="webhook_id (optional)"
        hint="Your own label, sent as webhook_id in every payload of this subscription."
        error={fieldError(problem, '/webhook_id')}
      >
        {(attributes) => (
          <input
            {...attributes}
            type="text"
            value={webhookId}
            onInput={(e) => setWebhookId(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        id="rate_limit"
        label="Rate limit (optional)"
        hint="Deliveries a second at most to this callback; empty for no limit."
        error={fieldError(problem, '/rate_limit')}
      >
        {(attributes) => (
          <input
            {...attributes}
            type="number"
            min={1}
            max={10000}
            step={1}
            value={rateLimit}
            onInput={(e) => setRateLimit(e.currentTarget.value)}
          />
        )}
      </Field>
      <div class="actions">
        <button class="primary" type="submit" disabled={busy}>
          {subscription ? 'Save changes' : 'Create subscription'}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
