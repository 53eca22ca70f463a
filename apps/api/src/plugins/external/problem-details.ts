/**
 * The one error handler: every 4xx and 5xx leaves as RFC 9457 problem details, validation failures
 * list each field's JSON pointer, 5xx details are logged (with the request id), never returned. A
 * PostgreSQL or Redis fault is a 503 with `Retry-After`; a 500 means a bug.
 */
import fp from 'fastify-plugin';
import { Problem } from '@webhooks/shared';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isInfrastructureError, serviceUnavailable } from '../../lib/infrastructure-error.js';
import { HttpProblem, type FieldError } from '../../lib/problem.js';
import { narrowUnionErrors, type AjvError } from '../../lib/union-errors.js';

/** Most field errors one 400 lists: unbounded, a 1 MB body of small wrong fields got a 7.45 MB answer. */
export const maxReportedFieldErrors = 20;

/** Longest JSON pointer reported, in characters; a longer one (a huge unknown key) is cut. */
const maxReportedPointerLength = 256;

/**
 * One field error per distinct Ajv error, naming the offending property, at most {@link maxReportedFieldErrors};
 * a tagged union's errors are those of the branch the value names ({@link narrowUnionErrors}).
 * @returns the errors reported and how many more there were
 */
function fieldErrors(
  errors: AjvError[],
  context: string | undefined,
): { reported: FieldError[]; more: number } {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of narrowUnionErrors(errors)) {
    let pointer = error.instancePath;
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'required') {
      pointer += `/${String(error.params.missingProperty)}`;
      detail = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      pointer += `/${String(error.params.additionalProperty)}`;
      detail = 'is not a known field';
    }
    if (context && context !== 'body') detail = `${context} parameter ${detail}`;
    if (pointer.length > maxReportedPointerLength) pointer = `${pointer.slice(0, maxReportedPointerLength)}…`;
    const key = `${pointer}\0${detail}`;
    if (!seen.has(key)) out.push({ pointer: pointer || '/', detail });
    seen.add(key);
  }
  return {
    reported: out.slice(0, maxReportedFieldErrors),
    more: Math.max(0, out.length - maxReportedFieldErrors),
  };
}

function send(reply: FastifyReply, request: FastifyRequest, problem: HttpProblem) {
  return reply
    .code(problem.status)
    .headers(problem.headers)
    .type('application/problem+json')
    .send(problem.toProblem(request.url.split('?')[0] ?? request.url));
}

export default fp(
  async (app) => {
    // Shared, so every problem response references one schema (lib/route-schemas.ts, problemResponse).
    app.addSchema(Problem);
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (error instanceof HttpProblem) return send(reply, request, error);
      if (error.validation) {
        const { reported, more } = fieldErrors(error.validation as AjvError[], error.validationContext);
        const listed = reported.map((e) => `${e.pointer.slice(1) || 'body'} ${e.detail}`).join('; ');
        const detail = more > 0 ? `${listed}; and ${more} more errors not listed` : listed;
        return send(reply, request, new HttpProblem(400, 'validation', detail, reported));
      }
      const status = error.statusCode ?? 500;
      if (status >= 400 && status < 500) {
        const slug = status === 413 ? 'too-large' : status === 429 ? 'rate-limited' : 'bad-request';
        return send(reply, request, new HttpProblem(status, slug, error.message));
      }
      if (isInfrastructureError(error)) {
        request.log.warn({ err: error }, 'dependency unavailable');
        return send(
          reply,
          request,
          serviceUnavailable('A service dependency (PostgreSQL or Redis) is unavailable. Retry later.'),
        );
      }
      request.log.error({ err: error }, 'request failed');
      return send(
        reply,
        request,
        new HttpProblem(500, 'internal', 'The request could not be completed; it is logged.'),
      );
    });
    app.setNotFoundHandler((request, reply) =>
      send(
        reply,
        request,
        new HttpProblem(404, 'not-found', `No route ${request.method} ${request.url.split('?')[0]}`),
      ),
    );
  },
  { name: 'problem-details' },
);
