/** @webhooks/api: the Fastify app builder and its configuration, for the server, tests and tools. */
export { buildApp, bodyLimitBytes } from './app.js';
export {
  apiEnvSchema,
  apiServerUrl,
  defaultRecoverRoundsPerMinute,
  developmentJwtSecret,
  loadApiConfig,
  type ApiConfig,
} from './config.js';
export { createTokenMinter, type TokenMinterOptions } from './tokens.js';
export type * from './decorators.js';
export { createPortalTokens, portalKey } from './lib/portal-tokens.js';
export { paceWindow, type PaceWindow } from './lib/recovery-pace.js';
