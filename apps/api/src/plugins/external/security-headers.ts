/**
 * Security headers on every answer, with helmet: `X-Content-Type-Options: nosniff`, no
 * framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), no referrer, and a
 * Content-Security-Policy that lets a JSON answer load nothing. Swagger UI and the portal set
 * policies of their own for their pages (swagger.ts, portal.ts).
 *
 * `Strict-Transport-Security` goes only on answers that reached the client over TLS (the request's
 * protocol, from `X-Forwarded-Proto` with TRUST_PROXY): RFC 6797 section 7.2 forbids it over plain
 * HTTP.
 *
 * helmet's middleware is built once here and run on every request: @fastify/helmet built it again
 * for each request (parsing the policy's directives), about 5% of the API's CPU under load.
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
