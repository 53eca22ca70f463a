/**
 * Bearer-token authentication of every `/api/*` request (specification section 5): a JWT verified
 * by @fastify/jwt with the one configured algorithm (`alg: none` and every other algorithm are
 * refused), `exp` and `nbf` honoured. The account is the token's `sub` claim. Any failure is a 401
 * with `WWW-Authenticate: Bearer` (RFC 6750 section 3) and a problem body, never a 500.
 */
import fp from 'fastify-plugin';
import type {} from '../decorators.js';
import jwt from '@fastify/jwt';
import { HttpProblem } from '../lib/problem.js';
import type { ApiConfig } from '../config.js';

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sub?: unknown };
  }
}

function unauthorized(detail: string, error = 'invalid_token'): HttpProblem {
  return new HttpProblem(401, 'unauthorized', detail, undefined, {
    'www-authenticate': `Bearer realm="webhooks", error="${error}", error_description="${detail}"`,
  });
}

export default fp<{ jwtKey: ApiConfig['jwtKey'] }>(
  async (app, options) => {
    const { algorithm, key } = options.jwtKey;
    await app.register(jwt, {
      secret: algorithm === 'HS256' ? key : { public: key, private: '' },
      verify: { algorithms: [algorithm] },
    });
    app.decorateRequest('accountId', '');
    app.addHook('onRequest', async (request) => {
      if (!request.url.startsWith('/api/')) return;
      const header = request.headers.authorization;
      if (header === undefined || !/^Bearer\s+\S+$/i.test(header)) {
        throw new HttpProblem(
          401,
          'unauthorized',
          'Send the credential as "Authorization: Bearer <token>"',
          undefined,
          {
            'www-authenticate': 'Bearer realm="webhooks"',
          },
        );
      }
      let payload: { sub?: unknown };
      try {
        payload = await request.jwtVerify<{ sub?: unknown }>();
      } catch (error) {
        const code = (error as { code?: string }).code;
        throw unauthorized(
          code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED' ? 'The token has expired' : 'The token is not valid',
        );
      }
      if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 255) {
        throw unauthorized('The token has no account (sub claim)');
      }
      request.accountId = payload.sub;
    });
  },
  { name: 'auth' },
);
