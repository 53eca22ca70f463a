/**
 * The idempotency key of a publish: the `Idempotency-Key` request header (IETF
 * draft-ietf-httpapi-idempotency-key-header, the header Stripe and Svix take, and the one
 * `@webhooks/client` retries a POST for) or the body's `idempotency_key`, which came first. Either
 * one alone is the key; both must agree.
 */
import Type from 'typebox';
import { maxIdempotencyKeyLength } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** The `Idempotency-Key` header of `POST /api/events`: 1 to 255 characters, as the publisher takes. */
export const IdempotencyKeyHeader = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: maxIdempotencyKeyLength,
      description:
        "Same key within 24 hours: the first event is returned. The same as the body's `idempotency_key`; when both are given they must be equal",
    }),
  ),
});

/**
 * The key a publish is deduplicated by, or undefined when it has none.
 *
 * @param fromBody the body's `idempotency_key`
 * @param fromHeader the `Idempotency-Key` header
 * @throws HttpProblem 400 (`/problems/validation`, pointer `/idempotency_key`) when both are given
 *   and differ: either could be the one the client meant to retry with
 */
export function idempotencyKeyOf(
  fromBody: string | undefined,
  fromHeader: string | undefined,
): string | undefined {
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    const detail = 'differs from the Idempotency-Key header; give one, or the same in both';
    throw new HttpProblem(400, 'validation', `idempotency_key ${detail}`, [
      { pointer: '/idempotency_key', detail },
    ]);
  }
  return fromBody ?? fromHeader;
}
