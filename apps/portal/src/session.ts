/**
 * The portal session: a one-time link arrives in the URL fragment (`#link=plk_…`, never sent to a
 * server) and is removed from the address bar at once; the page exchanges it for its session
 * token, which is kept in memory only (no cookie, no storage). A reload therefore needs a new link.
 */
import { createWebhookClient, type WebhookClient } from '@webhooks/client';
import { describeFailure } from './failure.js';

/** The link this page was opened with, or null; the fragment is cleared. */
export function takeLink(location: Location, history: History): string | null {
  const link = new URLSearchParams(location.hash.slice(1)).get('link');
  if (link !== null) history.replaceState(null, '', location.pathname + location.search);
  return link;
}

/** The session of `link`, or why there is none (a sentence for the page). */
export async function openSession(link: string): Promise<{ token: string } | { failure: string }> {
  try {
    const response = await fetch(new URL('/api/portal-sessions/exchange', window.location.origin), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ link }),
    });
    if (response.ok) return { token: ((await response.json()) as { token: string }).token };
    return { failure: describeFailure(response.status, undefined) };
  } catch {
    return { failure: describeFailure(0, undefined) };
  }
}

/** A client of the API that served this page, acting with `token`. */
export function portalClient(token: string): WebhookClient {
  return createWebhookClient({ baseUrl: window.location.origin, token });
}
