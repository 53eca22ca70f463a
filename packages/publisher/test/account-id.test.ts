import { describe, expect, it } from '@jest/globals';
import { isValidAccountId } from '../src/index.js';

describe('isValidAccountId', () => {
  it.each(['acme', 'a'.repeat(255), 'tenant/42 ü', 'org-\ud83d\ude00'])('accepts %j', (value) => {
    expect(isValidAccountId(value)).toBe(true);
  });

  it.each(['', ' ', '\t', 'a'.repeat(256), 'ac\u0007me', 'a\u0000', 'a\u009f', 'a\ud800', 42, null])(
    'refuses %j',
    (value) => {
      expect(isValidAccountId(value)).toBe(false);
    },
  );
});
