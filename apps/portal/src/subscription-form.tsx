/**
 * Creating and editing a subscription. The API validates; its problem details name each invalid
 * field by JSON pointer, and the error is shown next to that field (RFC 9457 `errors`).
 */
import { useState } from 'preact/hooks';
import type { Problem, Subscription, WebhookClient } from '@webhooks/client';
import { fieldError, outcome, useLoaded } from './api-call.js';
import { EventTypePicker, pickableTypes } from './event-type-picker.js';
import { Field } from './field.js';
import { describeDestination } from './parts.js';
import { DestinationFields, destinationBody, type DestinationChoice } from './destination-fields.js';
import { navigate } from './route.js';
import { ReceiverAccess, receiverAccessBody, useReceiverAccess } from './receiver-access.js';
import { TransformationEditor } from './transformation-editor.js';

/**
 * The choice of `subscription` among `all` (its kind's types): null when it takes every one, or
 * the types its `event_types` select, wildcards expanded (`call.*`, `*`) as the API matches them.
 */
function initialChoice(subscription: Subscription | undefined, all: string[]): string[] | null {
  if (!subscription) return null;
  const patterns = subscription.event_types;
  const selects = (type: string) =>
    patterns.some((p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))));
  const chosen = all.filter(selects);
  return chosen.length === all.length ? null : chosen;
}

/** The first error the API gave for the filter or a place inside it. */
function filterError(problem: Problem | undefined): string | undefined {
  const error = problem?.errors?.find((e) => e.pointer === '/filter' || e.pointer.startsWith('/filter/'));
  return error && `${error.pointer.slice('/filter'.length) || 'The filter'} ${error.detail}`;
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
  const [kind, setKind] = useState('');
  const [catalogue] = useLoaded(() => client.GET('/api/event-types'), [client]);
  const types = catalogue.state === 'ready' ? pickableTypes(catalogue.data, subscription?.kind ?? kind) : [];
  const [chosen, setChosen] = useState<string[] | null | undefined>(undefined);
  const choice =
    chosen === undefined
      ? initialChoice(
          subscription,
          types.map((t) => t.type),
        )
      : chosen;
  const [filterText, setFilterText] = useState(
    subscription?.filter ? JSON.stringify(subscription.filter, null, 2) : '',
  );
  const [filterParseError, setFilterParseError] = useState<string | undefined>();
  const [callbackUrl, setCallbackUrl] = useState(subscription?.callback_url ?? '');
  // A destination is chosen on create; afterwards the portal edits everything else about it.
  const [destination, setDestination] = useState<DestinationChoice>({ type: 'http', fields: {} });
  const broker =
    subscription === undefined ? destination.type !== 'http' : subscription.destination.type !== 'http';
  const [webhookId, setWebhookId] = useState(subscription?.webhook_id ?? '');
  const [rateLimit, setRateLimit] = useState(subscription?.rate_limit?.toString() ?? '');
  const [ordering, setOrdering] = useState<'none' | 'fifo'>(subscription?.ordering ?? 'none');
  const [access, setAccess] = useReceiverAccess();
  const [transformation, setTransformation] = useState(subscription?.transformation ?? '');
  const transformationChanged = transformation !== (subscription?.transformation ?? '');
  const sampleType = types[0];
  const sample =
    sampleType === undefined
      ? null
      : { type: sampleType.type, data: (sampleType.example ?? {}) as Record<string, unknown> };
  const [accessError, setAccessError] = useState<string | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    let filter: Record<string, unknown> | null = null;
    if (filterText.trim() !== '') {
      try {
        filter = JSON.parse(filterText) as Record<string, unknown>;
      } catch {
        setFilterParseError('The filter is not valid JSON.');
        return;
      }
    }
    setFilterParseError(undefined);
    const accessBody = receiverAccessBody(access);
    if ('error' in accessBody) {
      setAccessError(accessBody.error);
      return;
    }
    setAccessError(undefined);
    setBusy(true);
    const limit = rateLimit.trim() === '' ? null : Number(rateLimit);
    // Untouched: nothing to send (the default on create, the stored wildcards on edit); all of
    // them after a change: `*`.
    const eventTypes = chosen === undefined ? undefined : chosen === null ? ['*'] : chosen;
    const result = subscription
      ? await outcome(
          client.PUT('/api/webhooks/{id}', {
            params: { path: { id: subscription.id } },
            body: {
              ...(broker ? {} : { callback_url: callbackUrl }),
              webhook_id: webhookId === '' ? null : webhookId,
              rate_limit: limit,
              ordering,
              filter,
              ...(eventTypes === undefined ? {} : { event_types: eventTypes }),
              ...accessBody.body,
              ...(transformationChanged
                ? { transformation: transformation.trim() === '' ? null : transformation }
                : {}),
            },
          }),
        )
      : await outcome(
          // A kind's endpoint comes from the operator's catalogue, so the generated paths may not
          // name it; every one takes the body and gives the answer of /api/webhooks.
          client.POST((kind === '' ? '/api/webhooks' : `/api/webhooks/${kind}`) as '/api/webhooks', {
            body: {
              ...(broker ? { destination: destinationBody(destination)! } : { callback_url: callbackUrl }),
              ...(webhookId === '' ? {} : { webhook_id: webhookId }),
              ...(limit === null ? {} : { rate_limit: limit }),
              ...(eventTypes === undefined ? {} : { event_types: eventTypes }),
              ...(filter === null ? {} : { filter }),
              ...(ordering === 'none' ? {} : { ordering }),
              ...accessBody.body,
              ...(transformation.trim() === '' ? {} : { transformation }),
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
              onChange={(e) => {
                setKind(e.currentTarget.value);
                setChosen(undefined);
              }}
            >
              <option value="">Every kind</option>
              {catalogue.state === 'ready' &&
                catalogue.data.kinds.map((k) => (
                  <option key={k.kind} value={k.kind}>
                    {k.kind}: {k.description}
                  </option>
                ))}
            </select>
          )}
        </Field>
      )}
      {types.length > 0 && (
        <EventTypePicker
          types={types}
          chosen={choice}
          onChange={setChosen}
          error={fieldError(problem, '/event_types')}
        />
      )}
      {!subscription && (
        <DestinationFields choice={destination} onChange={setDestination} problem={problem} />
      )}
      {broker && subscription ? (
        <p>
          Delivered to {describeDestination(subscription.destination)}; the destination is changed through the
          API.
        </p>
      ) : broker ? null : (
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
      )}
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
      <Field
        id="filter"
        label="Content filter (optional)"
        hint='A JSON query on the payload; only events it matches are delivered. Example: {"data.direction": "inbound", "data.duration_seconds": {"$gte": 60}}'
        error={filterParseError ?? filterError(problem)}
      >
        {(attributes) => (
          <textarea
            {...attributes}
            rows={3}
            spellcheck={false}
            value={filterText}
            onInput={(e) => setFilterText(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        id="ordering"
        label="Ordering"
        hint="In order: one event at a time, in the order they happened; a failing one holds the later ones back until it succeeds or is given up."
        error={fieldError(problem, '/ordering')}
      >
        {(attributes) => (
          <select
            {...attributes}
            value={ordering}
            onChange={(e) => setOrdering(e.currentTarget.value as 'none' | 'fifo')}
          >
            <option value="none">As fast as possible (unordered)</option>
            <option value="fifo">In order, one at a time</option>
          </select>
        )}
      </Field>
      <TransformationEditor
        client={client}
        {...(subscription ? { subscription } : {})}
        value={transformation}
        onChange={setTransformation}
        sample={sample}
        {...(problem ? { problem } : {})}
      />
      {!broker && (
        <ReceiverAccess
          client={client}
          {...(subscription ? { subscription } : {})}
          state={access}
          onChange={setAccess}
          {...(problem ? { problem } : {})}
          {...(accessError ? { localError: accessError } : {})}
        />
      )}
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
