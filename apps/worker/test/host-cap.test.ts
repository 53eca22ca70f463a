/**
 * The cap per destination host, end to end: however many subscriptions of however many accounts
 * point at one host, at most HOST_MAX_IN_FLIGHT attempts reach it at once, and every delivery
 * still arrives. Orders of arrival are asserted, never durations.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { hostWaitMs } from '../src/delivery/host-gate.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../test/support/wait.js';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('host-cap', { HOST_MAX_IN_FLIGHT: '2', WORKER_CONCURRENCY: '20' });
});
afterAll(async () => {
  await stack.close();
}, 60_000);

const answerAfterMs = 300;

describe('the cap per destination host', () => {
  it('lets at most HOST_MAX_IN_FLIGHT attempts reach one host at once, across accounts', async () => {
    const paths: string[] = [];
    for (const account of ['acct-host-a', 'acct-host-b'])
      for (let i = 0; i < 3; i++) {
        const path = `/${account}/${i}`;
        stack.receiver.script(path, [{ status: 200, afterMs: answerAfterMs }]);
        await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
        paths.push(path);
      }
    for (const account of ['acct-host-a', 'acct-host-b'])
      for (let n = 0; n < 2; n++)
        await stack.publisher.publish({ accountId: account, type: 'call.completed', data: { n } });

    const expected = paths.length * 2;
    await waitFor('every delivery', () => paths.flatMap((p) => stack.receiver.at(p)).length === expected);
    const arrivals = paths
      .flatMap((p) => stack.receiver.at(p))
      .map((r) => r.at)
      .sort((a, b) => a - b);
    // A third request arrives only once one of the two before it has been answered.
    for (let i = 2; i < arrivals.length; i++)
      expect(arrivals[i]).toBeGreaterThanOrEqual(arrivals[i - 2]! + answerAfterMs);
  });
});

describe('the wait of an attempt over its host cap', () => {
  it('is 50 to 150 ms, spread by the random number', () => {
    expect(hostWaitMs(0)).toBe(50);
    expect(hostWaitMs(0.5)).toBe(100);
    expect(hostWaitMs(0.999)).toBe(150);
  });
});
