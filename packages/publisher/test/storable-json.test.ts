import { describe, expect, it } from '@jest/globals';
import { findUnstorableJson, pointerToken, unstorableTextReason } from '../src/index.js';

describe('unstorableTextReason', () => {
  it.each([
    ['plain text', 'hello', null],
    ['a surrogate pair (an emoji)', 'ok \ud83d\ude00', null],
    ['NUL', 'a\u0000b', /NUL/],
    ['a lone high surrogate', 'a\ud800', /surrogate/],
    ['a lone low surrogate', '\udc00a', /surrogate/],
    ['a reversed pair', '\ude00\ud83d', /surrogate/],
  ])('%s', (_, text, expected) => {
    const reason = unstorableTextReason(text);
    if (expected === null) expect(reason).toBeNull();
    else expect(reason).toMatch(expected);
  });
});

describe('findUnstorableJson', () => {
  it('names the first bad value or key by its JSON pointer, escaped per RFC 6901', () => {
    expect(findUnstorableJson({ a: [1, { 'b/c~': 'x\u0000' }] }, '/data')).toEqual({
      pointer: '/data/a/1/b~1c~0',
      detail: expect.stringMatching(/NUL/),
    });
    expect(findUnstorableJson({ ok: 1, ['k\ud800']: 1 })).toEqual({
      pointer: '/k\ud800',
      detail: expect.stringMatching(/key .*surrogate/),
    });
    expect(pointerToken('a/b~c')).toBe('a~1b~0c');
  });

  it('counts depth in containers: 32 levels pass, 33 do not', () => {
    const nested = (depth: number) => {
      let value: unknown = {};
      for (let i = 1; i < depth; i++) value = [value];
      return value;
    };
    expect(findUnstorableJson(nested(32), '/data', 32)).toBeNull();
    expect(findUnstorableJson(nested(33), '/data', 32)?.detail).toMatch(/deeper than 32/);
  });

  it('accepts scalars and clean documents', () => {
    expect(findUnstorableJson(null)).toBeNull();
    expect(findUnstorableJson({ a: [true, 1.5, 'é', null] })).toBeNull();
  });
});
