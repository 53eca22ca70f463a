/**
 * A publish's idempotency key: the `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header,
 * as Stripe and Svix) or the body's `idempotency_key`; both given must agree.
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
 * The key a publish is deduplicated by (`fromBody`, `fromHeader`), or undefined.
 * @throws HttpProblem 400 (pointer `/idempotency_key`) when both are given and differ
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
