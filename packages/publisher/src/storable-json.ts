/**
 * What PostgreSQL can store of client input: `text` and `jsonb` refuse NUL (`22P05`), and a lone
 * UTF-16 surrogate has no UTF-8 form, so both are refused at the door. Nesting is bounded below
 * the depth limits of Lua's cjson, jsonb and recursive code.
 */

/** Deepest nesting of event `data` accepted: `{}` is depth 1, `{"a": {}}` depth 2. */
export const maxDataDepth = 32;

/** A string or an object key that cannot be stored, or a value nested too deeply. */
export interface UnstorableJson {
  /** JSON pointer (RFC 6901) of the offending value or key, below the `pointer` given. */
  pointer: string;
  /** What is wrong with it, e.g. `contains the NUL character (\u0000)`. */
  detail: string;
}

const loneSurrogate = /\p{Cs}/u;

/** Why `text` cannot be PostgreSQL text (NUL, or a lone surrogate U+D800–U+DFFF), or null. */
export function unstorableTextReason(text: string): string | null {
  if (text.includes('\u0000')) return 'contains the NUL character (\\u0000)';
  if (loneSurrogate.test(text)) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

/** Escapes one reference token of a JSON pointer (RFC 6901 section 4: `~` is `~0`, `/` is `~1`). */
export function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * The first string, key or too deep value in parsed JSON `value` that cannot be stored, or null.
 * Depth counts containers (a top scalar is 0).
 * @param pointer the JSON pointer of `value`, prefixed to the one returned (default `''`)
 * @param maxDepth deepest nesting allowed (default {@link maxDataDepth})
 */
export function findUnstorableJson(
  value: unknown,
  pointer = '',
  maxDepth = maxDataDepth,
): UnstorableJson | null {
  const walk = (node: unknown, at: string, depth: number): UnstorableJson | null => {
    if (typeof node === 'string') {
      const reason = unstorableTextReason(node);
      return reason === null ? null : { pointer: at || '/', detail: reason };
    }
    if (node === null || typeof node !== 'object') return null;
    if (depth >= maxDepth) {
      return { pointer: at || '/', detail: `is nested deeper than ${maxDepth} levels` };
    }
    const entries = Array.isArray(node) ? node.entries() : Object.entries(node);
    for (const [key, child] of entries) {
      const childAt = `${at}/${pointerToken(String(key))}`;
      if (typeof key === 'string') {
        const reason = unstorableTextReason(key);
        if (reason !== null) return { pointer: childAt, detail: `has a key that ${reason}` };
      }
      const found = walk(child, childAt, depth + 1);
      if (found !== null) return found;
    }
    return null;
  };
  return walk(value, pointer, 0);
}
