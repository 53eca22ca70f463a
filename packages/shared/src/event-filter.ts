/**
 * Content filters (`filter`): a MongoDB-style query on the payload evaluated with sift, as Convoy
 * and Outpost offer. Only comparison, set, `$exists` and logical operators: no code, no regular
 * expression. They run in the shared fan-out, so their size and each evaluation's visits are
 * bounded; past {@link maxFilterVisits}, a filter matches nothing.
 */
import siftModule from 'sift';
import type * as Sift from 'sift';
import { findInJson, type JsonProblem } from '@webhooks/publisher';
import {
  countedOperations,
  filterOperations,
  FilterCostExceededError,
  withExplicitEquality,
} from './filter-operations.js';

export { FilterCostExceededError } from './filter-operations.js';

// sift is CommonJS: Node exposes its functions on the default export only.
const { createQueryTester } = siftModule as unknown as typeof Sift;

/** Largest filter, in bytes of its JSON serialization. */
export const maxFilterBytes = 4096;
/** Deepest nesting of objects and arrays in a filter. */
export const maxFilterDepth = 8;
/** Most operators (`$` keys) in a filter. */
export const maxFilterOperators = 32;
/** Most operands of one `$in`, `$nin` or `$all`. */
export const maxFilterOperands = 64;
/** Most values one evaluation visits: ample for ordinary payloads, far below a hostile one's ~4 million. */
export const maxFilterVisits = 10_000;

/** The operators a filter may use. */
export const filterOperators: readonly string[] = Object.keys(filterOperations);

const operandOperators = new Set(['$in', '$nin', '$all']);

/** A filter as stored: a JSON object. */
export type EventFilter = Record<string, unknown>;

/**
 * The problem with `filter`, or null when it can be stored.
 * @returns `{ pointer, detail }`: the JSON pointer (RFC 6901) of the first operator not allowed or
 *   level too deep, `''` for the whole filter
 */
export function eventFilterProblem(filter: unknown): JsonProblem | null {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    return { pointer: '', detail: 'must be a JSON object' };
  }
  if (Buffer.byteLength(JSON.stringify(filter)) > maxFilterBytes) {
    return { pointer: '', detail: `is larger than ${maxFilterBytes} bytes serialized` };
  }
  let operators = 0;
  const found = findInJson(filter, maxFilterDepth, (key, value) => {
    if (!key.startsWith('$')) return null;
    if (!filterOperators.includes(key))
      return `${key} is not an allowed operator (${filterOperators.join(' ')})`;
    if (++operators > maxFilterOperators)
      return `is one operator more than the ${maxFilterOperators} a filter may have`;
    if (operandOperators.has(key) && Array.isArray(value) && value.length > maxFilterOperands) {
      return `has ${value.length} operands; ${key} takes at most ${maxFilterOperands}`;
    }
    return null;
  });
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
 * The tester of an accepted filter: true when `payload` matches, visiting at most `maxVisits` values.
 * @throws Error from sift for a malformed query; the tester throws FilterCostExceededError past `maxVisits`
 */
export function compileEventFilter(
  filter: EventFilter,
  maxVisits = maxFilterVisits,
): (payload: Record<string, unknown>) => boolean {
  let visits = 0;
  const operations = countedOperations(() => {
    if (++visits > maxVisits) throw new FilterCostExceededError(maxVisits);
  });
  const test = createQueryTester(withExplicitEquality(filter), { operations });
  return (payload) => {
    visits = 0;
    return test(payload);
  };
}

/**
 * Whether `payload` passes a compiled filter; one sift cannot evaluate, or over its budget of visits,
 * matches nothing (`onError` hears why).
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
