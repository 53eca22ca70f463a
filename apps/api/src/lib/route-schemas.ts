/** Schema pieces every route repeats: the problem responses and the subscription id parameter. */
import Type from 'typebox';

/** Path parameter `{id}` of a subscription. */
export const SubscriptionParams = Type.Object({ id: Type.String({ description: 'Subscription id' }) });

/** Path parameters of one delivery. */
export const DeliveryParams = Type.Object({
  id: Type.String({ description: 'Subscription id' }),
  delivery_id: Type.String({ description: 'Delivery id' }),
});

/**
 * A problem response: `application/problem+json` (RFC 9457 §3) referencing the shared `Problem`
 * schema, so SDK generators type every error as one.
 */
export function problemResponse(description: string) {
  return { description, content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } } };
}

/** Problem responses of an authenticated route; 503 when PostgreSQL or Redis is unavailable. */
export const problemResponses = {
  400: problemResponse('Invalid request: `errors` names each invalid field by JSON pointer'),
  401: problemResponse('Missing, invalid or expired bearer token'),
  404: problemResponse('No such resource in the account of the token'),
  429: problemResponse("The account's request rate limit is reached; retry after `Retry-After` seconds"),
  503: problemResponse('PostgreSQL or Redis is unavailable; retry after `Retry-After` seconds'),
} as const;

/** 413: a body larger than the API accepts (1 MiB). */
export const payloadTooLarge = problemResponse('The request body is larger than 1 MiB');
