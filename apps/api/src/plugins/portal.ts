/**
 * The subscriber portal (issue #13): the static build of apps/portal, served at `/portal/` with
 * @fastify/static, every asset from this API (no CDN). The page holds its session token in memory
 * and calls the REST API like any client. It may be embedded in a platform's dashboard (an iframe),
 * so frames are allowed; scripts, styles and calls are limited to this origin.
 */
import { existsSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/** Options of the portal plugin. */
export interface PortalOptions {
  /** The folder of the portal's build (apps/portal/dist). */
  root: string;
}

/** The Content-Security-Policy of the portal's files. */
export const portalContentSecurityPolicy =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

const portal: FastifyPluginAsync<PortalOptions> = async (app, options) => {
  if (!existsSync(options.root)) {
    app.log.warn({ root: options.root }, 'portal not built: /portal/ is off (run pnpm build)');
    return;
  }
  app.addHook('onSend', async (_request, reply) => {
    reply.header('content-security-policy', portalContentSecurityPolicy);
    reply.header('referrer-policy', 'no-referrer');
  });
  await app.register(fastifyStatic, { root: options.root, prefix: '/portal/', index: false });
  // The page itself; the app ignores trailing slashes, so `/portal` is served too.
  app.get('/portal/', { schema: { hide: true } }, (_request, reply) => reply.sendFile('index.html'));
};

export default portal;
