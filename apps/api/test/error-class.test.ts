import { describe, expect, it } from '@jest/globals';
import { accountErrorClass } from '../src/lib/views.js';

describe("an attempt's error class as the account reads it", () => {
  it.each([
    ['dns', 'unreachable_address'],
    ['blocked_address', 'unreachable_address'],
    ['timeout', 'timeout'],
    ['connection_refused', 'connection_refused'],
    ['expired', 'expired'],
    [null, null],
  ])('%s reads as %s', (stored, shown) => {
    expect(accountErrorClass(stored)).toBe(shown);
  });
});
