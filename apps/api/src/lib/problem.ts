/**
 * RFC 9457 problem details: the error class routes throw and the body the error handler writes.
 * Problem `type` URIs are relative references to the API documentation, one per problem kind.
 */
import type { Problem } from '@webhooks/shared';

/** A problem's field-level errors: JSON pointer (RFC 6901) and what is wrong. */
export type FieldError = { pointer: string; detail: string };

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** An HTTP error answered as problem details. Thrown by routes and plugins. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    detail: string,
    readonly errors?: FieldError[],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }

  /** The problem details body for this error at `instance` (the request path). */
  toProblem(instance: string): Problem {
    return problemBody(this.status, this.slug, this.message, instance, this.errors);
  }
}

/** Builds a problem details body; `slug` names the problem type (`/problems/<slug>`). */
export function problemBody(
  status: number,
  slug: string,
  detail: string,
  instance: string,
  errors?: FieldError[],
): Problem {
  return {
    type: `/problems/${slug}`,
    title: titles[status] ?? 'Error',
    status,
    detail,
    instance,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

/** 404 for a resource that does not exist or belongs to another account (the two look alike). */
export function notFound(what: string): HttpProblem {
  return new HttpProblem(404, 'not-found', `${what} not found`);
}

/** 409: a subscription that is disabled cannot be sent anything (retry, recovery, test event). */
export function subscriptionDisabled(): HttpProblem {
  return new HttpProblem(409, 'conflict', 'The subscription is disabled; set its status to active first');
}
