/**
 * The paths of the API's resources, used as `resource_uri` (the specification's hypermedia
 * convention, section 1). Shared because the worker names subscriptions in operational events.
 */

/** Path of a subscription. */
export const subscriptionUri = (id: string) => `/api/webhooks/${id}`;

/** Path of a delivery. */
export const deliveryUri = (subscriptionId: string, id: string) =>
  `/api/webhooks/${subscriptionId}/deliveries/${id}`;

/** Path of a subscription's deliveries. */
export const deliveriesUri = (subscriptionId: string) => `/api/webhooks/${subscriptionId}/deliveries`;
