/**
 * Content filters of subscriptions (`filter`): a MongoDB-style query on the payload a callback
 * would receive (`type`, `timestamp`, `webhook_id`, `data`), evaluated with sift, as Convoy and
 * Outpost offer them. Example: `{"data.direction": "inbound", "data.duration_seconds": {"$gte": 60}}`.
 *
 * Only comparison (`$eq $ne $gt $gte $lt $lte`), set (`$in $nin $all`), existence (`$exists`) and
 * logical (`$and $or $nor $not`) operators are allowed: `$where`, `$regex` and every other
 * operator are refused when the filter is written, and sift is given no others, so no filter runs
 * code or a regular expression. A filter is at most {@link maxFilterBytes} bytes serialized and
 * {@link maxFilterDepth} levels deep.
 */
import siftModule from 'sift';
import type * as Sift from 'sift';
import { findInJson, type JsonProblem } from './json-walk.js';

// sift is CommonJS: Node exposes its operations on the default export only.
const { $all, $and, $eq, $exists, $gt, $gte, $in, $lt, $lte, $ne, $nin, $nor, $not, $or, createQueryTester } =
  siftModule as unknown as typeof Sift;

/** Largest filter, in bytes of its JSON serialization. */
export const maxFilterBytes = 4096;
/** Deepest nesting of objects and arrays in a filter. */
export const maxFilterDepth = 8;

const operations = { $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $all, $exists, $and, $or, $nor, $not };

/** The operators a filter may use. */
export const filterOperators: readonly string[] = Object.keys(operations);

/** A filter as stored: a JSON object. */
export type EventFilter = Record<string, unknown>;

/**
 * The problem with `filter`, or null when it can be stored.
 *
 * @returns `{ pointer, detail }` with the JSON pointer (RFC 6901) inside the filter of the first
 *   operator that is not allowed or of the level too deep, or `pointer: ''` for the whole filter
 */
export function eventFilterProblem(filter: unknown): JsonProblem | null {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    return { pointer: '', detail: 'must be a JSON object' };
  }
  if (Buffer.byteLength(JSON.stringify(filter)) > maxFilterBytes) {
    return { pointer: '', detail: `is larger than ${maxFilterBytes} bytes serialized` };
  }
  const found = findInJson(filter, maxFilterDepth, (key) =>
    key.startsWith('$') && !filterOperators.includes(key)
      ? `${key} is not an allowed operator (${filterOperators.join(' ')})`
      : null,
  );
  if (found) return found;
  try {
    // Some malformed operands (`$in` given a non-array) only fail when evaluated.
    compileEventFilter(filter as EventFilter)({});
  } catch (error) {
    return { pointer: '', detail: `is not a valid query: ${(error as Error).message}` };
  }
  return null;
}

/**
 * The tester of a filter that {@link eventFilterProblem} accepted: true when `payload` matches.
 *
 * @throws Error from sift for a malformed query (such as `$in` given a non-array)
 */
export function compileEventFilter(filter: EventFilter): (payload: Record<string, unknown>) => boolean {
  return createQueryTester(filter, { operations });
}

/**
 * Whether `payload` passes a compiled filter ({@link compileEventFilter}). A filter sift cannot
 * evaluate (only one stored before a rule changed, since the API checks each) matches nothing;
 * `onError` hears why.
 */
export function passesEventFilter(
  tester: (payload: Record<string, unknown>) => boolean,
  payload: Record<string, unknown>,
  onError: (error: unknown) => void = () => {},
): boolean {
  try {
    return tester(payload);
  } catch (error) {
    onError(error);
    return false;
  }
}
