/**
 * The subscriber portal: apps/portal's build at `/portal/` (@fastify/static, no CDN); it holds its
 * token in memory and calls the REST API. Embeddable by PORTAL_FRAME_ANCESTORS' origins only.
 */
import { existsSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

/** Options of the portal plugin. */
export interface PortalOptions {
  /** The folder of the portal's build (apps/portal/dist). */
  root: string;
  /** PORTAL_FRAME_ANCESTORS: the CSP `frame-ancestors` sources that may embed the portal. */
  frameAncestors: string;
}

/** The portal's Content-Security-Policy: this origin only, embedding by `frameAncestors` (CSP Level 2). */
export function portalContentSecurityPolicy(frameAncestors: string): string {
  return `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ${frameAncestors}`;
}

const portal: FastifyPluginAsync<PortalOptions> = async (app, options) => {
  if (!existsSync(options.root)) {
    app.log.warn({ root: options.root }, 'portal not built: /portal/ is off (run pnpm build)');
    return;
  }
  const policy = portalContentSecurityPolicy(options.frameAncestors);
  app.addHook('onSend', async (_request, reply) => {
    reply.header('content-security-policy', policy);
    // frame-ancestors decides who may embed the portal; X-Frame-Options would refuse them all.
    reply.removeHeader('x-frame-options');
  });
  await app.register(fastifyStatic, { root: options.root, prefix: '/portal/', index: false });
  // The page itself; the app ignores trailing slashes, so `/portal` is served too.
  app.get('/portal/', { schema: { hide: true } }, (_request, reply) => reply.sendFile('index.html'));
};

export default fp(portal, { name: 'portal', encapsulate: true });
