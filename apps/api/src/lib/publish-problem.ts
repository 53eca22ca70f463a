/** What the API answers when the publisher refuses an event or cannot queue it. */
import type { FastifyBaseLogger } from 'fastify';
import { EventInputError, PublishUnavailableError } from '@webhooks/shared';
import { serviceUnavailable } from './infrastructure-error.js';
import { HttpProblem } from './problem.js';

/**
 * The problem to throw for `error`, raised by `EventPublisher.publish`: 400 or 413 naming each field
 * an EventInputError refused; 503 with `Retry-After` (logged at warn) for a PublishUnavailableError,
 * since nothing was accepted; anything else unchanged.
 */
export function publishProblem(error: unknown, log: FastifyBaseLogger): unknown {
  if (error instanceof EventInputError) {
    return new HttpProblem(error.status, error.status === 413 ? 'too-large' : 'validation', error.message, [
      ...error.errors,
    ]);
  }
  if (error instanceof PublishUnavailableError) {
    log.warn({ err: error }, 'event could not be queued');
    return serviceUnavailable(
      'The event could not be queued; nothing was accepted. Retry later with the same idempotency_key.',
    );
  }
  return error;
}
