/**
 * `POST /api/portal-sessions` (issue #13): a platform's backend mints a link to the subscriber
 * portal for its logged-in customer. The token rides in the URL fragment, so it never reaches a
 * server log; a portal token may not mint another.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PortalSession, PortalSessionCreate } from '@webhooks/shared';
import { defaultPortalSessionSeconds, type PortalTokens } from '../lib/portal-tokens.js';
import { problemResponse, problemResponses } from '../lib/route-schemas.js';
import type { Views } from '../lib/views.js';

/** Options of the portal session route. */
export interface PortalSessionOptions {
  tokens: PortalTokens;
  /** Presenters under PUBLIC_BASE_URL (the link's address). */
  views: Views;
}

const portalSessions: FastifyPluginAsyncTypebox<PortalSessionOptions> = async (app, options) => {
  app.post(
    '/api/portal-sessions',
    {
      config: { portalRefused: true },
      // A request without a body asks for the defaults.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['portal'],
        operationId: 'createPortalSession',
        summary: 'Mint a link to the subscriber portal for the account of the token',
        body: PortalSessionCreate,
        response: {
          200: PortalSession,
          403: problemResponse('Portal session tokens cannot mint portal sessions'),
          ...problemResponses,
        },
      },
    },
    async (request) => {
      const ttl = request.body.ttl_seconds ?? defaultPortalSessionSeconds;
      const { token, expiresAt } = options.tokens.mint(request.accountId, ttl);
      return { url: options.views.portalLink(token), expires_at: expiresAt.toISOString() };
    },
  );
};

export default portalSessions;
