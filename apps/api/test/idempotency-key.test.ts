import { describe, expect, it } from '@jest/globals';
import { idempotencyKeyOf } from '../src/lib/idempotency-key.js';
import { HttpProblem } from '../src/lib/problem.js';

describe('the idempotency key of a publish', () => {
  it('is the body field or the header, whichever is given', () => {
    expect(idempotencyKeyOf('k', undefined)).toBe('k');
    expect(idempotencyKeyOf(undefined, 'k')).toBe('k');
    expect(idempotencyKeyOf('k', 'k')).toBe('k');
    expect(idempotencyKeyOf(undefined, undefined)).toBeUndefined();
  });

  it('is refused (400 naming the body field) when the two differ', () => {
    const refusal = (() => {
      try {
        idempotencyKeyOf('a', 'b');
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(HttpProblem);
    expect(refusal).toMatchObject({ status: 400, errors: [{ pointer: '/idempotency_key' }] });
  });
});
