/**
 * The operations content filters are evaluated with: sift's own, each visit counted against a
 * budget per evaluation, and scalar `$in`/`$nin` looked up in a set. A visit is one operation on one
 * value of its path: `$in` on a 1,000-element `data.a` is about 1,000, whatever the operands.
 */
import siftModule from 'sift';
import type * as Sift from 'sift';

// sift is CommonJS: Node exposes its operations on the default export only.
const { $all, $and, $eq, $exists, $gt, $gte, $lt, $lte, $ne, $nor, $not, $or } =
  siftModule as unknown as typeof Sift;

type Key = string | number;
type Options = Parameters<typeof $eq>[2];
type OperationCreator = (params: unknown, ownerQuery: unknown, options: Options, name: string) => Operation;

/** sift's operation interface (core.ts `Operation`), which it calls as it walks a payload. */
interface Operation {
  readonly propop: boolean;
  keep: boolean;
  done: boolean;
  reset(): void;
  next(item: unknown, key?: Key, owner?: unknown, root?: boolean, leaf?: boolean): void;
}

/** Thrown by an evaluation that visited more values than its budget allows. */
export class FilterCostExceededError extends Error {
  constructor(readonly maxVisits: number) {
    super(`content filter evaluation visited more than ${maxVisits} values; it matches nothing`);
    this.name = 'FilterCostExceededError';
  }
}

const isScalar = (value: unknown) =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/** sift's rule (utils.ts `isMissingArrayProperty`): the array itself, seen at a name it lacks. */
const isMissingArrayProperty = (key: Key | undefined, owner: unknown) =>
  Array.isArray(owner) && !((key as Key) in owner) && Number.isNaN(Number(key));

/**
 * Membership in `$in`/`$nin` operands with sift's equality: scalars by identity, `null` equals null
 * and missing, objects and arrays deeply (`compare`).
 * @throws Error for an operand holding an operator, as sift does ("cannot nest $ under $in")
 */
function membership(params: unknown, options: Options, name: string): (item: unknown) => boolean {
  const operands = Array.isArray(params) ? params : [params];
  const scalars = new Set<unknown>();
  const others: unknown[] = [];
  let hasNull = false;
  for (const operand of operands) {
    if (isScalar(operand)) scalars.add(operand);
    else if (operand === null) hasNull = true;
    else if (typeof operand === 'object' && Object.keys(operand).some((k) => k.startsWith('$')))
      throw new Error(`cannot nest $ under ${name.toLowerCase()}`);
    else others.push(operand);
  }
  return (item) =>
    scalars.has(item) ||
    (hasNull && item == null) ||
    (others.length > 0 && typeof item === 'object' && others.some((o) => options.compare(o, item)));
}

/** `$in` as sift evaluates it (operations.ts `$In`), with a set lookup. */
class In implements Operation {
  readonly propop = true;
  keep = false;
  done = false;
  protected readonly contains: (item: unknown) => boolean;
  constructor(params: unknown, options: Options, name: string) {
    this.contains = membership(params, options, name);
  }
  reset() {
    this.keep = false;
    this.done = false;
  }
  next(item: unknown, key?: Key, owner?: unknown) {
    if (isMissingArrayProperty(key, owner)) return;
    this.keep = this.done = this.contains(item);
  }
}

/** `$nin` as sift evaluates it (operations.ts `$Nin`): one member anywhere on the path fails it. */
class NotIn extends In {
  override reset() {
    this.keep = true;
    this.done = false;
  }
  override next(item: unknown, key?: Key, owner?: unknown) {
    if (isMissingArrayProperty(key, owner) || !this.contains(item)) return;
    this.keep = false;
    this.done = true;
  }
}

const $in: OperationCreator = (params, _owner, options, name) => new In(params, options, name);
const $nin: OperationCreator = (params, _owner, options, name) => new NotIn(params, options, name);

/** The operations a filter may use, by name, uncounted. */
export const filterOperations = {
  ...({ $eq, $ne, $gt, $gte, $lt, $lte } as unknown as Record<string, OperationCreator>),
  $in,
  $nin,
  ...({ $all, $exists, $and, $or, $nor, $not } as unknown as Record<string, OperationCreator>),
} satisfies Record<string, OperationCreator>;

/** {@link filterOperations} with each visit counted through `visit`, which throws over budget. */
export function countedOperations(visit: () => void): Record<string, OperationCreator> {
  return Object.fromEntries(
    Object.entries(filterOperations).map(([name, create]) => [
      name,
      (params: unknown, owner: unknown, options: Options, opName: string) => {
        const operation = create(params, owner, options, opName);
        const next = operation.next.bind(operation);
        operation.next = (...args) => {
          visit();
          next(...args);
        };
        return operation;
      },
    ]),
  );
}

/** `query` with implicit equalities written as `$eq` (the same sift operation), so every comparison is counted. */
export function withExplicitEquality(query: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(query).map(([key, value]) => {
      if (key === '$and' || key === '$or' || key === '$nor') {
        return [
          key,
          Array.isArray(value) ? value.map((q) => (isQuery(q) ? withExplicitEquality(q) : q)) : value,
        ];
      }
      if (key.startsWith('$') || holdsOperator(value)) return [key, value];
      return [key, { $eq: value }];
    }),
  );
}

const isQuery = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const holdsOperator = (value: unknown) => isQuery(value) && Object.keys(value).some((k) => k.startsWith('$'));
