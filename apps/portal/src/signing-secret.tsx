/**
 * The signing secret of a subscription: hidden until asked for, copied in one click, rotated after
 * a confirmation saying that the old secret keeps signing for 24 hours (signing-secret.ts in the API).
 */
import { useState } from 'preact/hooks';
import type { WebhookClient } from '@webhooks/client';
import { outcome } from './api-call.js';
import { Confirm, Time } from './parts.js';

type Secret = { secret: string; previous_secret_expires_at: string | null };

/** The panel of subscription `id`. */
export function SigningSecret({ client, id }: { client: WebhookClient; id: string }) {
  const [secret, setSecret] = useState<Secret | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [copied, setCopied] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);

  async function reveal() {
    const result = await outcome(client.GET('/api/webhooks/{id}/secret', { params: { path: { id } } }));
    if (result.ok) setSecret(result.data);
    setFailure(result.ok ? null : result.failure);
  }
  async function rotate() {
    const result = await outcome(
      client.POST('/api/webhooks/{id}/secret/rotate', { params: { path: { id } } }),
    );
    setConfirming(false);
    setCopied(false);
    if (result.ok) setSecret(result.data);
    setFailure(result.ok ? null : result.failure);
  }
  async function copy() {
    if (secret === null) return;
    try {
      await navigator.clipboard.writeText(secret.secret);
      setCopied(true);
    } catch {
      setFailure('Your browser did not allow copying; select the secret and copy it yourself.');
    }
  }

  return (
    <section class="panel" aria-labelledby="secret-heading">
      <h3 id="secret-heading">Signing secret</h3>
      <p class="hint">
        Every delivery is signed with it (Standard Webhooks): verify the signature before trusting a payload.
      </p>
      {failure && (
        <p class="form-error" role="alert">
          {failure}
        </p>
      )}
      {secret === null ? (
        <button type="button" onClick={reveal}>
          Reveal secret
        </button>
      ) : (
        <>
          <div class="secret-row">
            <code class="secret" aria-label="Current signing secret">
              {secret.secret}
            </code>
            <button type="button" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </button>
          </div>
          {secret.previous_secret_expires_at && (
            <p role="status">
              The previous secret keeps signing beside this one until{' '}
              <Time iso={secret.previous_secret_expires_at} />.
            </p>
          )}
        </>
      )}
      {confirming ? (
        <Confirm
          id="rotate-question"
          question="Rotate the signing secret? A new secret signs every delivery from now on. The current one keeps signing too, for 24 hours, so you can switch your receiver without missing an event."
          confirm="Rotate now"
          keep="Keep the current secret"
          onConfirm={rotate}
          onKeep={() => setConfirming(false)}
        />
      ) : (
        <div class="actions">
          <button type="button" onClick={() => setConfirming(true)}>
            Rotate secret…
          </button>
        </div>
      )}
    </section>
  );
}
