/**
 * The operations content filters are evaluated with, bounded in cost: sift's own, each counted
 * against a budget of visits per evaluation, and `$in`/`$nin` looked up in a set for scalar
 * operands instead of compared with every operand. Used by event-filter.ts only.
 *
 * A visit is one operation applied to one value on its path: `{"data.a": {"$in": [...]}}` on a
 * `data.a` of 1,000 elements makes about 1,000 visits, whatever the number of operands.
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
 * Membership in the operands of `$in` or `$nin`, with sift's equality (values as parsed from JSON):
 * a scalar operand equals the identical scalar, `null` equals null and a missing value, an object
 * or array operand is compared deeply with sift's `compare`.
 *
 * @throws Error for an operand that holds an operator, as sift does ("cannot nest $ under $in")
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

/**
 * {@link filterOperations} with every visit of each operation counted through `visit`, which
 * throws to end an evaluation over budget.
 */
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

/**
 * `query` with each field's implicit equality (`{"data.a": 1}`) written as `$eq`, the same sift
 * operation, so that every comparison goes through a counted operation.
 */
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
