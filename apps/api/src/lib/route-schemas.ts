/** Schema pieces every route repeats: the problem responses and the subscription id parameter. */
import Type from 'typebox';
import { Problem } from '@webhooks/shared';

/** Path parameter `{id}` of a subscription. */
export const SubscriptionParams = Type.Object({ id: Type.String({ description: 'Subscription id' }) });

/** Path parameters of one delivery. */
export const DeliveryParams = Type.Object({
  id: Type.String({ description: 'Subscription id' }),
  delivery_id: Type.String({ description: 'Delivery id' }),
});

/** Problem responses of an authenticated route; 503 when PostgreSQL or Redis is unavailable. */
export const problemResponses = {
  400: Problem,
  401: Problem,
  404: Problem,
  429: Problem,
  503: Problem,
} as const;
