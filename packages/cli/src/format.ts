/** How the CLI prints: one line per delivery change, one per subscription; pure, so tested without a terminal. */

/** A delivery as `GET /api/events/{id}` lists it, with its event's type. */
export interface DeliveryView {
  id: string;
  subscription: { id: string };
  status: string;
  attempts_made: number;
  last_status_code: number | null;
  last_error: string | null;
  updated_at: string;
}

/** A delivery's line: when it changed, `type`, status, attempts, last answer and its subscription. */
export function deliveryLine(type: string, delivery: DeliveryView): string {
  const answer = delivery.last_status_code ?? delivery.last_error ?? '-';
  return [
    delivery.updated_at,
    type.padEnd(24),
    delivery.status.padEnd(9),
    `attempts=${delivery.attempts_made}`,
    `answer=${answer}`,
    `subscription=${delivery.subscription.id}`,
  ].join('  ');
}

/** A subscription as the API shows it, as far as a listing needs. */
export interface SubscriptionView {
  id: string;
  status: string;
  kind: string | null;
  callback_url: string;
  event_types: string[];
}

/** The line of a subscription: id, status, kind (`*` for every kind), callback URL, chosen types. */
export function subscriptionLine(subscription: SubscriptionView): string {
  const types = subscription.event_types.length === 0 ? 'all types' : subscription.event_types.join(',');
  return [
    subscription.id,
    subscription.status.padEnd(8),
    (subscription.kind ?? '*').padEnd(10),
    subscription.callback_url,
    types,
  ].join('  ');
}

/** Whether a delivery's status or attempts changed since printed; `seen` (id → key printed last) is updated. */
export function changed(seen: Map<string, string>, delivery: DeliveryView): boolean {
  const key = `${delivery.status}/${delivery.attempts_made}`;
  if (seen.get(delivery.id) === key) return false;
  seen.set(delivery.id, key);
  return true;
}
