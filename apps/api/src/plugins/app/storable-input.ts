/**
 * Refuses, before validation and before anything is written or queued, a request whose body or
 * query string carries text PostgreSQL cannot store: the NUL character or a lone surrogate, in a
 * value or an object key, or nesting deeper than the body's bound. Answers 400 problem
 * details naming the JSON pointer (query parameters as `/<name>`). Event `data` has its own tighter
 * depth bound, checked with the rest of the event by the publisher (`checkEventInput`).
 */
import fp from 'fastify-plugin';
import { findUnstorableJson, maxDataDepth } from '@webhooks/shared';
import { HttpProblem } from '../../lib/problem.js';

/**
 * Deepest nesting of any request body: a guard well above event `data`'s own bound
 * ({@link maxDataDepth}, checked by the publisher with its own message), so no recursion further
 * down ever meets a hostile depth.
 */
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
