/**
 * Refuses, before validation, a body or query carrying what PostgreSQL cannot store (NUL, a lone
 * surrogate) or nested past the body's bound: 400 naming the JSON pointer (query as `/<name>`).
 */
import fp from 'fastify-plugin';
import { findUnstorableJson, maxDataDepth } from '@webhooks/shared';
import { HttpProblem } from '../../lib/problem.js';

/** Deepest nesting of a request body: far above event `data`'s own bound, so no recursion meets a hostile depth. */
export const maxBodyDepth = 2 * maxDataDepth;

export default fp(
  async (app) => {
    app.addHook('preValidation', async (request) => {
      const found =
        findUnstorableJson(request.body, '', maxBodyDepth) ??
        // A query is an object of strings, or of arrays of strings for a repeated parameter.
        findUnstorableJson(request.query, '', 2);
      if (found !== null) {
        const field = found.pointer === '/' ? 'the body' : found.pointer.slice(1);
        throw new HttpProblem(400, 'validation', `${field} ${found.detail}`, [found]);
      }
    });
  },
  { name: 'storable-input' },
);
