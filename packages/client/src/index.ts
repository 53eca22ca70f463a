/**
 * `@webhooks/client`: subscribing and receiving from one package. `createWebhookClient` calls the
 * REST API with types generated from its OpenAPI document; `verifyWebhook` checks a delivery's
 * Standard Webhooks signature in a receiver.
 */
export {
  createWebhookClient,
  type EventCatalogue,
  type Problem,
  type Subscription,
  type WebhookClient,
  type WebhookClientOptions,
} from './client.js';
export { mayRetry, retryAfterSpreadMs, type RetryPolicy } from './retries.js';
export {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookHeaders,
  type WebhookPayload,
} from './verify.js';
export type { components, operations, paths } from './schema.js';
