/**
 * Portal sessions. `POST /api/portal-sessions` mints a one-time link to the subscriber portal for a
 * platform's logged-in customer, in the URL fragment so no server logs it; a portal token may not mint
 * one. `DELETE /api/portal-sessions/{id}` revokes a session. The link's exchange is open
 * (`portalLinkExchange`): the browser holding it has no other credential.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import {
  PortalLinkExchange,
  PortalSession,
  PortalSessionCreate,
  PortalSessionParams,
  PortalSessionToken,
} from '@webhooks/shared';
import { HttpProblem, notFound } from '../lib/problem.js';
import type { PortalLinks } from '../lib/portal-links.js';
import { defaultPortalSessionSeconds } from '../lib/portal-tokens.js';
import { problemResponse, problemResponses } from '../lib/route-schemas.js';
import type { Views } from '../lib/views.js';

/** Options of the portal session routes. */
export interface PortalSessionOptions {
  links: PortalLinks;
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
        summary: 'Mint a one-time link to the subscriber portal for the account of the token',
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
      const { id, link, expiresAt } = await options.links.create(request.accountId, ttl);
      return { id, url: options.views.portalLink(link), expires_at: expiresAt.toISOString() };
    },
  );

  app.delete(
    '/api/portal-sessions/:id',
    {
      config: { portalRefused: true },
      schema: {
        tags: ['portal'],
        operationId: 'revokePortalSession',
        summary: 'Revoke a portal session: its link and its token stop working at once',
        params: PortalSessionParams,
        response: {
          204: { type: 'null', description: 'Revoked' },
          403: problemResponse('Portal session tokens cannot revoke portal sessions'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      if (!(await options.links.revoke(request.accountId, request.params.id)))
        throw notFound(`Portal session ${request.params.id}`);
      return reply.code(204).send(null);
    },
  );
};

const linkExchange: FastifyPluginAsyncTypebox<{ links: PortalLinks }> = async (app, options) => {
  app.post(
    '/api/portal-sessions/exchange',
    {
      schema: {
        tags: ['portal'],
        operationId: 'exchangePortalLink',
        summary: 'Exchange a one-time portal link for its session token (the portal page does this)',
        security: [],
        body: PortalLinkExchange,
        response: {
          200: PortalSessionToken,
          ...problemResponses,
          401: problemResponse('The link has expired, was used already, or was revoked'),
        },
      },
    },
    async (request, reply) => {
      const session = await options.links.exchange(request.body.link);
      if (session === null)
        throw new HttpProblem(
          401,
          'unauthorized',
          'The portal link has expired, was used already, or was revoked; ask for a new one',
        );
      return reply
        .header('cache-control', 'no-store')
        .send({ token: session.token, expires_at: session.expiresAt.toISOString() });
    },
  );
};

/** `POST /api/portal-sessions/exchange`: a one-time link for its session token; open route. */
export const portalLinkExchange = fp(linkExchange, { name: 'portal-link-exchange', encapsulate: true });

export default fp(portalSessions, { name: 'portal-session-routes', encapsulate: true });
