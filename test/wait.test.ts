import { describe, expect, it } from '@jest/globals';
import { waitWhileGrowing } from '../scripts/lib/wait.js';

describe('waiting for a backlog to drain (scripts/lib/wait.ts)', () => {
  it('waits past pauses shorter than the stall window, for as long as the count keeps growing', async () => {
    // Grows by one every third poll: each pause is two polls of 5 ms, far under the 1 s stall window.
    let polls = 0;
    const count = () => Math.floor(polls++ / 3);
    expect(await waitWhileGrowing(count, 20, 1_000, 5)).toBe(20);
  });

  it('gives up once the count stops moving, and returns where it stopped', async () => {
    let polls = 0;
    const count = () => Math.min(7, polls++);
    expect(await waitWhileGrowing(count, 20, 50, 5)).toBe(7);
    // It polled on after the last growth, so it did not give up at the first still poll.
    expect(polls).toBeGreaterThan(9);
  });
});
