/**
 * The subscriber portal: the static build of apps/portal, served at `/portal/` with
 * @fastify/static, every asset from this API (no CDN). The page holds its session token in memory
 * and calls the REST API like any client. It may be embedded in a platform's dashboard (an iframe)
 * by the origins of PORTAL_FRAME_ANCESTORS; scripts, styles and calls are limited to this origin.
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

/**
 * The Content-Security-Policy of the portal's files: everything from this origin only, and
 * embedding by `frameAncestors` (CSP Level 2, `frame-ancestors`).
 */
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
