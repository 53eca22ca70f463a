import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import siftModule from 'sift';
import {
  compileEventFilter,
  eventFilterProblem,
  FilterCostExceededError,
  maxFilterBytes,
  maxFilterOperands,
  maxFilterOperators,
  passesEventFilter,
} from '../src/event-filter.js';

// sift is CommonJS: Node exposes its default export as a property of the module.
const sift = (siftModule as unknown as { default: (query: unknown) => (value: unknown) => boolean }).default;

const payload = {
  type: 'call.completed',
  data: { direction: 'inbound', duration_seconds: 184, tags: ['vip'] },
};

describe('content filters', () => {
  it.each([
    [{ 'data.direction': 'inbound', 'data.duration_seconds': { $gte: 60 } }, true],
    [{ 'data.direction': 'outbound' }, false],
    [{ 'data.duration_seconds': { $lt: 60 } }, false],
    [{ $or: [{ 'data.direction': 'outbound' }, { type: { $in: ['call.completed'] } }] }, true],
    [{ 'data.reason': { $exists: true } }, false],
    [{ 'data.tags': { $all: ['vip'] } }, true],
    [{ 'data.direction': { $not: { $eq: 'inbound' } } }, false],
  ])('%j on a completed inbound call of 184 s: %s', (filter, expected) => {
    expect(eventFilterProblem(filter)).toBeNull();
    expect(compileEventFilter(filter)(payload)).toBe(expected);
  });

  it.each([
    [{ $where: 'this.data.x' }, '/$where'],
    [{ 'data.text': { $regex: '(a+)+$' } }, '/data.text/$regex'],
    [{ 'data.n': { $mod: [2, 0] } }, '/data.n/$mod'],
    [{ $and: [{ $or: [{ a: { $elemMatch: { b: 1 } } }] }] }, '/$and/0/$or/0/a/$elemMatch'],
  ])('refuses %j naming %s', (filter, pointer) => {
    expect(eventFilterProblem(filter)).toMatchObject({
      pointer,
      detail: expect.stringMatching(/not an allowed operator/),
    });
  });

  it('refuses filters too large or too deep, and what is not an object', () => {
    expect(eventFilterProblem({ a: 'x'.repeat(maxFilterBytes) })?.detail).toMatch(/larger than/);
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 10; i++) deep = { $and: [deep] };
    expect(eventFilterProblem(deep)?.detail).toMatch(/deeper than/);
    expect(eventFilterProblem([])?.detail).toMatch(/JSON object/);
  });
});

describe("a content filter's cost", () => {
  const numbers = (count: number, from = 1) => Array.from({ length: count }, (_, i) => from + i);

  it('refuses more operands to $in, $nin or $all than the limit, naming the operator', () => {
    for (const operator of ['$in', '$nin', '$all']) {
      expect(eventFilterProblem({ 'data.a': { [operator]: numbers(maxFilterOperands) } })).toBeNull();
      expect(eventFilterProblem({ 'data.a': { [operator]: numbers(maxFilterOperands + 1) } })).toEqual({
        pointer: `/data.a/${operator}`,
        detail: `has ${maxFilterOperands + 1} operands; ${operator} takes at most ${maxFilterOperands}`,
      });
    }
  });

  it('refuses more operators than the limit, naming the first one past it', () => {
    const conditions = (count: number) => numbers(count).map((n) => ({ [`data.f${n}`]: { $gt: n } }));
    expect(eventFilterProblem({ $and: conditions(maxFilterOperators - 1) })).toBeNull();
    expect(eventFilterProblem({ $and: conditions(maxFilterOperators) })).toMatchObject({
      pointer: `/$and/${maxFilterOperators - 1}/data.f${maxFilterOperators}/$gt`,
      detail: expect.stringMatching(/operator more than the 32/),
    });
  });

  it('stops an evaluation of a hostile payload at its budget, and the filter matches nothing', () => {
    // The security review's case: a path into an array of 128,000 zeros, against operands that
    // never match, so that every element is visited.
    const filter = { 'data.a': { $in: numbers(maxFilterOperands) } };
    const hostile = { type: 'call.completed', data: { a: new Array<number>(128_000).fill(0) } };
    expect(eventFilterProblem(filter)).toBeNull();
    expect(() => compileEventFilter(filter)(hostile)).toThrow(FilterCostExceededError);
    const reasons: unknown[] = [];
    expect(passesEventFilter(compileEventFilter(filter), hostile, (e) => reasons.push(e))).toBe(false);
    expect(reasons).toEqual([expect.any(FilterCostExceededError)]);
    // The same payload, unbounded, is evaluated to the end: it is the budget that stopped it.
    expect(compileEventFilter(filter, Infinity)(hostile)).toBe(false);
  });

  it('counts implicit equalities and every operation against the same budget', () => {
    const wide = { data: { items: numbers(6_000).map((n) => ({ sku: `s${n}` })) } };
    // 6,000 visits each, 12,000 together.
    const filter = { 'data.items.sku': 'nope', 'data.items.id': { $exists: true } };
    expect(() => compileEventFilter({ 'data.items.sku': 'nope' })(wide)).not.toThrow();
    expect(() => compileEventFilter(filter)(wide)).toThrow(FilterCostExceededError);
    // An ordinary payload stays far inside it, and each evaluation starts afresh.
    const tester = compileEventFilter({ 'data.items.sku': 's999' }, 1_500);
    const ordinary = { data: { items: numbers(1_000).map((n) => ({ sku: `s${n}` })) } };
    expect(tester(ordinary)).toBe(true);
    expect(tester(ordinary)).toBe(true);
  });
});

describe('the bounded operators: $in and $nin in a set, implicit equality as $eq', () => {
  // Values as a JSON payload holds them, operands as a filter may give them.
  const value = fc.oneof(
    fc.constantFrom(0, 1, -0, 'a', 'b', '1', true, false, null),
    fc.constantFrom([1], ['a', 'b'], { k: 1 }, { k: 'a' }, []),
  );
  const payload = fc.record(
    {
      a: fc.oneof(value, fc.array(value, { maxLength: 4 })),
      b: fc.array(fc.record({ c: value }), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  );
  const condition = fc.record({
    path: fc.constantFrom('a', 'b.c', 'a.0', 'missing'),
    operator: fc.constantFrom('$in', '$nin', 'implicit'),
    operands: fc.array(value, { maxLength: 5 }),
  });

  it("match exactly what sift's own operators match", () => {
    fc.assert(
      fc.property(payload, condition, (data, { path, operator, operands }) => {
        const condition = { [path]: operator === 'implicit' ? operands[0] : { [operator]: operands } };
        const filter = { $or: [condition, { $and: [condition, { [path]: { $ne: 'x' } }] }] };
        expect(compileEventFilter(condition)(data)).toBe(sift(condition)(data));
        expect(compileEventFilter(filter)(data)).toBe(sift(filter)(data));
      }),
      { numRuns: 2_000 },
    );
  });
});
