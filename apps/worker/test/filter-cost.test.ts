/**
 * A hostile content filter cannot stall the fan-out every account shares: ten subscriptions with
 * the largest `$in` a filter may have, and events whose filtered path holds 128,000 values, cost
 * the fan-out a bounded time. Another account's deliveries keep pace with its publishes, asserted
 * through their order, and the overrun is logged with the account. The worker runs as its own
 * process, so that a stall in it cannot also stall this file's publishes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { maxFilterOperands } from '@webhooks/shared';
import { startProcessStack, type ProcessStack } from '../../../test/support/process-stack.js';
import { sleep, waitFor } from '../../../scripts/lib/wait.js';

let stack: ProcessStack;
beforeAll(async () => {
  stack = await startProcessStack('filter-cost');
});
afterAll(() => stack.close());

const hostileEvents = 10;
const steadyEvents = 20;
/** How many of the steady account's later publishes may be accepted before one is delivered. */
const allowedLag = 10;

describe('a content filter at its limits on a hostile payload', () => {
  it("does not hold up another account's deliveries, and matches nothing", async () => {
    const { receiver, publisher, worker } = stack;
    // Operands that never match the payload's zeros, so that an unbounded evaluation visits every
    // one of the 128,000 values for each of the ten subscriptions.
    const operands = Array.from({ length: maxFilterOperands }, (_, i) => i + 1);
    for (let i = 0; i < 10; i++) {
      await stack.subscribe('acct-hostile', {
        callback_url: `${receiver.url}/hostile/${i}`,
        filter: { 'data.a': { $in: operands } },
      });
    }
    await stack.subscribe('acct-steady', { callback_url: `${receiver.url}/steady` });
    await stack.started();

    const zeros = new Array<number>(128_000).fill(0);
    for (let i = 0; i < hostileEvents; i++) {
      await publisher.publish({
        accountId: 'acct-hostile',
        type: 'call.completed',
        data: { call_id: 'h', a: zeros },
      });
    }
    const steady: Array<{ id: string; acceptedAt: number }> = [];
    for (let i = 0; i < steadyEvents; i++) {
      const { id } = await publisher.publish({
        accountId: 'acct-steady',
        type: 'call.completed',
        data: { call_id: 's' },
      });
      steady.push({ id, acceptedAt: Date.now() });
      await sleep(100);
    }

    await waitFor('every steady delivery', () => receiver.at('/steady').length >= steadyEvents, 60_000);
    const deliveredAt = new Map(receiver.at('/steady').map((r) => [String(r.headers['webhook-id']), r.at]));
    // Unbounded, the hostile events cost the fan-out seconds, and the first steady events arrived
    // only after all twenty were accepted. Bounded, each one is delivered before the steady
    // account's publish `allowedLag` later is accepted.
    const overtaken = steady
      .slice(0, steadyEvents - allowedLag)
      .map((event, i) => ({
        event: i,
        late: deliveredAt.get(event.id)! > steady[i + allowedLag]!.acceptedAt,
      }))
      .filter(({ late }) => late);
    expect(overtaken).toEqual([]);
    expect(receiver.requests.filter((r) => r.path.startsWith('/hostile/'))).toEqual([]);
    await waitFor('the overrun to be logged', () => worker.output.join('').includes('evaluation budget'));
    const warning = worker.output
      .join('')
      .split('\n')
      .find((line) => line.includes('evaluation budget'))!;
    expect(JSON.parse(warning)).toMatchObject({ accountId: 'acct-hostile' });
  }, 120_000);
});
