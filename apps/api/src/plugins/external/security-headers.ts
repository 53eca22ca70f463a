/**
 * Security headers on every answer, with helmet (built once, not per request as @fastify/helmet does):
 * `nosniff`, no framing, no referrer, and a CSP that lets a JSON answer load nothing. HSTS only on
 * answers that reached the client over TLS (RFC 6797 section 7.2).
 */
import fp from 'fastify-plugin';
import helmet from 'helmet';

/** HSTS's `max-age`, in seconds: one year, as RFC 6797's examples and browsers' preload lists use. */
export const hstsMaxAgeSeconds = 31_536_000;

export default fp(
  async (app) => {
    const setHeaders = helmet({
      hsts: false,
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
          formAction: ["'none'"],
        },
      },
    });
    // helmet calls `next` with an Error or nothing, as Fastify's `done` takes them.
    app.addHook('onRequest', (request, reply, done) =>
      setHeaders(request.raw, reply.raw, done as (error?: unknown) => void),
    );
    app.addHook('onSend', (request, reply, payload, done) => {
      if (request.protocol === 'https')
        reply.header('strict-transport-security', `max-age=${hstsMaxAgeSeconds}; includeSubDomains`);
      done(null, payload);
    });
  },
  { name: 'security-headers' },
);
