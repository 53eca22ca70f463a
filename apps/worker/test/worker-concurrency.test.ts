/**
 * The `deliveries` worker's adaptive concurrency: the pure rule, and the loop that applies it,
 * driven by this process's own event loop kept busy and then left idle.
 */
import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  adaptConcurrency,
  highUtilization,
  lowUtilization,
  nextConcurrency,
} from '../src/scheduling/worker-concurrency.js';
import { waitFor } from '../../../test/support/wait.js';

const bounds = { min: 10, max: 50 };

describe('the next concurrency limit', () => {
  it('is cut by a quarter while the event loop is busy, down to the minimum', () => {
    expect(nextConcurrency(50, 0.99, bounds)).toBe(37);
    expect(nextConcurrency(12, highUtilization + 0.01, bounds)).toBe(10);
    expect(nextConcurrency(10, 1, bounds)).toBe(10);
  });

  it('grows by two while the loop has time to spare, up to WORKER_CONCURRENCY', () => {
    expect(nextConcurrency(10, 0.2, bounds)).toBe(12);
    expect(nextConcurrency(49, lowUtilization - 0.01, bounds)).toBe(50);
    expect(nextConcurrency(50, 0, bounds)).toBe(50);
  });

  it('holds between the two thresholds, so that it settles instead of swinging', () => {
    expect(nextConcurrency(23, (highUtilization + lowUtilization) / 2, bounds)).toBe(23);
  });
});

describe('adapting a worker', () => {
  /** Keeps this process's event loop busy for `ms`, in slices that let timers fire between them. */
  const busyFor = async (ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const slice = Date.now() + 45;
      while (Date.now() < slice && Date.now() < end);
      await sleep(1);
    }
  };

  it('lowers the limit while the loop is busy and gives it back once the loop is idle', async () => {
    const worker = { concurrency: 1 };
    const limits: number[] = [];
    const stop = adaptConcurrency(worker, bounds, 50, (limit) => limits.push(limit));
    try {
      expect(worker.concurrency).toBe(50);
      await busyFor(800);
      expect(worker.concurrency).toBeLessThan(50);
      const lowest = Math.min(...limits);
      await waitFor('the limit back at WORKER_CONCURRENCY', () => worker.concurrency === 50);
      expect(limits[0]).toBe(50);
      expect(lowest).toBeGreaterThanOrEqual(bounds.min);
      expect(limits.at(-1)).toBe(50);
    } finally {
      stop();
    }
  });

  it('keeps the limit fixed when WORKER_CONCURRENCY_MIN is not below WORKER_CONCURRENCY', async () => {
    const worker = { concurrency: 1 };
    const limits: number[] = [];
    const stop = adaptConcurrency(worker, { min: 50, max: 50 }, 50, (limit) => limits.push(limit));
    await busyFor(300);
    stop();
    expect(worker.concurrency).toBe(50);
    expect(limits).toEqual([50]);
  });
});
