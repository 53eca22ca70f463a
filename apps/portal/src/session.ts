/**
 * The portal session: the token arrives in the URL fragment (`#token=…`, never sent to a server),
 * is kept in memory only (no cookie, no storage) and removed from the address bar at once.
 */
import { createWebhookClient, type WebhookClient } from '@webhooks/client';

/** The token of the link this page was opened with, or null; the fragment is cleared. */
export function takeToken(location: Location, history: History): string | null {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (token !== null) history.replaceState(null, '', location.pathname + location.search);
  return token;
}

/** A client of the API that served this page, acting with `token`. */
export function portalClient(token: string): WebhookClient {
  return createWebhookClient({ baseUrl: window.location.origin, token });
}
