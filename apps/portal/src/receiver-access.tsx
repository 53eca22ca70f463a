/**
 * What a receiver behind a gateway or firewall needs, in the subscription form: custom headers (an API
 * key for the gateway) and a client certificate for mutual TLS. The API never shows a key and masks
 * header values, so on an existing subscription the fields start empty and are sent only when changed.
 */
import { useState } from 'preact/hooks';
import type { Problem, Subscription, WebhookClient } from '@webhooks/client';
import { fieldError, outcome } from './api-call.js';
import { Field } from './field.js';

/** The section's state: the headers as text, the certificate and key, and what was changed. */
export interface ReceiverAccessState {
  headersText: string;
  headersTouched: boolean;
  certificate: string;
  key: string;
  removeCertificate: boolean;
}

/** The section's state, empty: nothing changed yet. */
export function useReceiverAccess() {
  return useState<ReceiverAccessState>({
    headersText: '',
    headersTouched: false,
    certificate: '',
    key: '',
    removeCertificate: false,
  });
}

/**
 * The headers of `text`, one `Name: value` a line (blank lines ignored), or the error of the first
 * line that is not one. Names and values are checked by the API, which names the header it refuses.
 */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  const headers: Record<string, string> = {};
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return { error: `Line ${i + 1} is not "Name: value".` };
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return { headers };
}

/**
 * The part of a create or update body the section changes, or the error to show instead: headers
 * when their text was changed (all of them: the API replaces the set), the certificate when both
 * PEM fields are filled, null to remove it.
 */
export function receiverAccessBody(state: ReceiverAccessState):
  | {
      body: {
        headers?: Record<string, string>;
        client_certificate?: { certificate: string; key: string } | null;
      };
    }
  | { error: string } {
  const body: {
    headers?: Record<string, string>;
    client_certificate?: { certificate: string; key: string } | null;
  } = {};
  if (state.headersTouched) {
    const parsed = parseHeaderLines(state.headersText);
    if ('error' in parsed) return parsed;
    body.headers = parsed.headers;
  }
  if (state.removeCertificate) body.client_certificate = null;
  else if (state.certificate.trim() !== '' || state.key.trim() !== '') {
    if (state.certificate.trim() === '' || state.key.trim() === '')
      return { error: 'Give both the certificate and its key.' };
    body.client_certificate = { certificate: state.certificate, key: state.key };
  }
  return { body };
}

/** The section: headers (with their current values on request) and the client certificate. */
export function ReceiverAccess({
  client,
  subscription,
  state,
  onChange,
  problem,
  localError,
}: {
  client: WebhookClient;
  subscription?: Subscription;
  state: ReceiverAccessState;
  onChange: (state: ReceiverAccessState) => void;
  problem?: Problem;
  localError?: string;
}) {
  const [loadFailure, setLoadFailure] = useState<string | undefined>();
  const current = subscription ? Object.keys(subscription.headers) : [];
  const headerProblem = problem?.errors?.find(
    (e) => e.pointer === '/headers' || e.pointer.startsWith('/headers/'),
  );
  const showValues = async () => {
    if (!subscription) return;
    const result = await outcome(
      client.GET('/api/webhooks/{id}/headers', { params: { path: { id: subscription.id } } }),
    );
    if (!result.ok) return setLoadFailure(result.failure);
    const text = Object.entries(result.data.headers)
      .map(([name, value]) => `${name}: ${value}`)
      .join('\n');
    onChange({ ...state, headersText: text, headersTouched: true });
  };
  const summary = subscription?.client_certificate;
  return (
    <fieldset class="field">
      <legend>Reaching your receiver (optional)</legend>
      <Field
        id="headers"
        label="Custom headers"
        hint={
          current.length > 0 && !state.headersTouched
            ? `Sent now: ${current.join(', ')} (values hidden). Leave this empty to keep them, or show them to edit.`
            : 'One "Name: value" a line, sent with every delivery: an API key for the gateway in front of your callback, say.'
        }
        error={
          localError ??
          loadFailure ??
          (headerProblem &&
            `${headerProblem.pointer.slice('/headers/'.length) || 'Headers'}: ${headerProblem.detail}`)
        }
      >
        {(attributes) => (
          <textarea
            {...attributes}
            rows={3}
            spellcheck={false}
            value={state.headersText}
            placeholder="Authorization: Bearer gateway-key"
            onInput={(e) => onChange({ ...state, headersText: e.currentTarget.value, headersTouched: true })}
          />
        )}
      </Field>
      {current.length > 0 && !state.headersTouched && (
        <button type="button" onClick={() => void showValues()}>
          Show current headers
        </button>
      )}
      <Field
        id="client_certificate"
        label="Client certificate (mutual TLS)"
        hint={
          summary
            ? `Presented now: ${summary.subject}, valid to ${new Date(summary.valid_to).toLocaleDateString()}. Paste a new certificate and key to replace it.`
            : 'PEM certificate presented when your server asks for one; its key is stored encrypted and never shown again.'
        }
        error={
          fieldError(problem, '/client_certificate') ?? fieldError(problem, '/client_certificate/certificate')
        }
      >
        {(attributes) => (
          <textarea
            {...attributes}
            rows={3}
            spellcheck={false}
            value={state.certificate}
            placeholder="-----BEGIN CERTIFICATE-----"
            onInput={(e) => onChange({ ...state, certificate: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id="client_key" label="Its private key" error={fieldError(problem, '/client_certificate/key')}>
        {(attributes) => (
          <textarea
            {...attributes}
            rows={3}
            spellcheck={false}
            value={state.key}
            placeholder="-----BEGIN PRIVATE KEY-----"
            onInput={(e) => onChange({ ...state, key: e.currentTarget.value })}
          />
        )}
      </Field>
      {summary && (
        <label>
          <input
            type="checkbox"
            checked={state.removeCertificate}
            onChange={(e) => onChange({ ...state, removeCertificate: e.currentTarget.checked })}
          />{' '}
          Remove the certificate
        </label>
      )}
    </fieldset>
  );
}
