/**
 * Content filters (`filter`): a MongoDB-style query on the payload (`type`, `timestamp`,
 * `webhook_id`, `data`) evaluated with sift, as Convoy and Outpost offer. Only comparison, set,
 * `$exists` and logical operators are allowed, so no filter runs code or a regular expression.
 * Filters run in the shared fan-out, so their cost is bounded: {@link maxFilterBytes},
 * {@link maxFilterDepth}, {@link maxFilterOperators}, {@link maxFilterOperands}, and
 * {@link maxFilterVisits} values per evaluation, past which the filter matches nothing.
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
/**
 * Most values one evaluation visits (an operation applied to one value on its path): enough for
 * every condition of a filter on ordinary payloads, far below what a hostile payload of 256 KiB
 * and a filter at the limits above would cost unbounded (about 4 million).
 */
export const maxFilterVisits = 10_000;

/** The operators a filter may use. */
export const filterOperators: readonly string[] = Object.keys(filterOperations);

const operandOperators = new Set(['$in', '$nin', '$all']);

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
 * The tester of a filter that {@link eventFilterProblem} accepted: true when `payload` matches.
 * Each call of the tester may visit at most `maxVisits` values.
 *
 * @throws Error from sift for a malformed query (such as an operator nested under `$in`); the
 *   tester throws FilterCostExceededError when an evaluation goes over `maxVisits`
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
 * Whether `payload` passes a compiled filter ({@link compileEventFilter}). A filter sift cannot
 * evaluate (only one stored before a rule changed, since the API checks each), and an evaluation
 * over its budget of visits (FilterCostExceededError), match nothing; `onError` hears why.
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
