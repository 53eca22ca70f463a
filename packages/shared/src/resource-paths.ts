/** The API's resource addresses (`resource_uri`, `Location`, page links; specification §1), shared with the worker. */

/** Addresses of the API's resources under one base. */
export interface ResourceLinks {
  /** The subscription collection, `{base}/api/webhooks`. */
  subscriptions: string;
  /** One subscription, `{base}/api/webhooks/{id}`. */
  subscription(id: string): string;
  /** A subscription's deliveries, `{base}/api/webhooks/{id}/deliveries`. */
  deliveries(subscriptionId: string): string;
  /** One delivery, `{base}/api/webhooks/{id}/deliveries/{delivery_id}`. */
  delivery(subscriptionId: string, id: string): string;
  /** The endpoint creating subscriptions of one kind, `{base}/api/webhooks/{kind}`. */
  kindSubscriptions(kind: string): string;
  /** The subscriber portal page, `{base}/portal/`. */
  portal: string;
  /** The account's events, `{base}/api/events`. */
  events: string;
  /** One event, `{base}/api/events/{id}`. */
  event(id: string): string;
}

/** The links under `baseUrl`: PUBLIC_BASE_URL (trailing slash dropped), or `''` for root-relative paths. */
export function resourceLinks(baseUrl: string): ResourceLinks {
  const base = baseUrl.replace(/\/+$/, '');
  const subscriptions = `${base}/api/webhooks`;
  const subscription = (id: string) => `${subscriptions}/${id}`;
  const deliveries = (subscriptionId: string) => `${subscription(subscriptionId)}/deliveries`;
  return {
    subscriptions,
    subscription,
    deliveries,
    delivery: (subscriptionId, id) => `${deliveries(subscriptionId)}/${id}`,
    kindSubscriptions: (kind) => `${subscriptions}/${kind}`,
    portal: `${base}/portal/`,
    events: `${base}/api/events`,
    event: (id) => `${base}/api/events/${id}`,
  };
}
