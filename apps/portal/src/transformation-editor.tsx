/**
 * A subscription's transformation, in its form: the JavaScript source and, once saved, a "Try it" that
 * runs the text as written on a catalogue sample (`POST /api/webhooks/{id}/transformation-tests`),
 * showing what would be sent, a cancellation, or the error an attempt would fail with.
 */
import { useState } from 'preact/hooks';
import type { Problem, Subscription, WebhookClient } from '@webhooks/client';
import { fieldError, outcome } from './api-call.js';
import { Field } from './field.js';
import { Json } from './parts.js';

/** What a try answered, as shown. */
type Tried = { ok: true; answer: unknown } | { ok: false; failure: string };

/** The editor; `value` is the source as typed, `sample` the event a try runs on. */
export function TransformationEditor({
  client,
  subscription,
  value,
  onChange,
  sample,
  problem,
}: {
  client: WebhookClient;
  subscription?: Subscription;
  value: string;
  onChange: (value: string) => void;
  sample: { type: string; data: Record<string, unknown> } | null;
  problem?: Problem;
}) {
  const [tried, setTried] = useState<Tried | null>(null);
  const tryIt = async () => {
    if (!subscription || sample === null || value.trim() === '') return;
    const result = await outcome(
      client.POST('/api/webhooks/{id}/transformation-tests', {
        params: { path: { id: subscription.id } },
        body: { payload: sample, transformation: value },
      }),
    );
    setTried(result.ok ? { ok: true, answer: result.data } : { ok: false, failure: result.failure });
  };
  return (
    <>
      <Field
        id="transformation"
        label="Transformation (optional)"
        hint="JavaScript run on each webhook before it is sent: function handler(webhook) { …; return webhook; } gets {payload, headers, url, event_type} and returns it changed, or sets webhook.cancel = true."
        error={fieldError(problem, '/transformation')}
      >
        {(attributes) => (
          <textarea
            {...attributes}
            rows={6}
            spellcheck={false}
            value={value}
            placeholder="function handler(webhook) { return webhook; }"
            onInput={(e) => onChange(e.currentTarget.value)}
          />
        )}
      </Field>
      {subscription && sample !== null && value.trim() !== '' && (
        <button type="button" onClick={() => void tryIt()}>
          Try it on a {sample.type} example
        </button>
      )}
      {tried && (
        <div role="status">
          {tried.ok ? (
            <Json value={tried.answer} label="What the transformation makes of the example" />
          ) : (
            tried.failure
          )}
        </div>
      )}
    </>
  );
}
