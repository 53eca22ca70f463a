/** Walking parsed JSON depth first for checks that refuse part of one, naming where (RFC 6901 pointer). */

/** `key` as one JSON pointer segment: `~` and `/` escaped (RFC 6901 section 3). */
export function jsonPointerSegment(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** What is wrong, and where: the JSON pointer of the offending member. */
export interface JsonProblem {
  pointer: string;
  detail: string;
}

/**
 * The first problem in `value`: a member `check` refuses (given its key and value), or nesting past
 * `maxDepth`; `pointer` is `value`'s own, prefixed to those reported.
 */
export function findInJson(
  value: unknown,
  maxDepth: number,
  check: (key: string, child: unknown) => string | null,
  pointer = '',
  depth = 1,
): JsonProblem | null {
  if (value === null || typeof value !== 'object') return null;
  if (depth > maxDepth) return { pointer, detail: `nests deeper than ${maxDepth} levels` };
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    const at = `${pointer}/${jsonPointerSegment(key)}`;
    const detail = check(key, child);
    if (detail !== null) return { pointer: at, detail };
    const found = findInJson(child, maxDepth, check, at, depth + 1);
    if (found) return found;
  }
  return null;
}
