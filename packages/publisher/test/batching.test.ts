import { describe, expect, it } from '@jest/globals';
import { batcher } from '../src/index.js';

describe('batcher', () => {
  it('runs concurrent calls as one batch, each getting its own result', async () => {
    const batches: number[][] = [];
    const double = batcher<number, number>(async (inputs) => {
      batches.push([...inputs]);
      return inputs.map((n) => n * 2);
    });
    expect(await Promise.all([1, 2, 3].map(double))).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('retries a failed batch item by item, so only the poisoned input fails', async () => {
    const batches: number[][] = [];
    const write = batcher<number, string>(async (inputs) => {
      batches.push([...inputs]);
      if (inputs.includes(0)) throw new Error('refused row');
      return inputs.map((n) => `ok ${n}`);
    });
    const results = await Promise.allSettled([1, 0, 2].map(write));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(batches).toEqual([[1, 0, 2], [1], [0], [2]]);
  });
});
