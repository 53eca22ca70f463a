import { describe, expect, it } from '@jest/globals';
import { compileEventFilter, eventFilterProblem, maxFilterBytes } from '../src/event-filter.js';

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
