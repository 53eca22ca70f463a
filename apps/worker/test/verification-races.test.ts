/**
 * Callback verification (CALLBACK_VERIFICATION=challenge) cannot be skipped or turned into a
 * flood, through the real services: a status sent together with a new callback_url never leaves
 * the new callback active unverified; auto-disable never overwrites `pending` (which the client
 * could then re-enable); asking for the challenge again and again queues one.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { verificationRetry } from '@webhooks/shared';
import { echoChallenge } from '../../../test/support/challenge.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('verification-races', {
    CALLBACK_VERIFICATION: 'challenge',
    DELIVERY_MAX_ATTEMPTS: '1',
    SUBSCRIPTION_DISABLE_AFTER: '1',
    DELIVERY_TIMEOUT_MS: '1000',
  });
});
afterAll(() => stack.close(), 60_000);

const call = (account: string, method: 'GET' | 'PUT' | 'POST', url: string, payload?: object) =>
  stack.api.app.inject({ method, url, headers: stack.api.auth(account), ...(payload ? { payload } : {}) });

const read = async (account: string, id: string) =>
  (await call(account, 'GET', `/api/webhooks/${id}`)).json() as { status: string; callback_url: string };

/** A subscription of `account` at `path`, once its callback has answered its challenge. */
async function verified(account: string, path: string): Promise<string> {
  stack.receiver.script(path, [echoChallenge]);
  const { id } = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
  await waitFor(`${path} active`, async () => (await read(account, id)).status === 'active');
  return id;
}

describe('a new callback_url and a status sent together', () => {
  it('never leave the new callback active without its challenge answered', async () => {
    const rounds = 8;
    const ids = await Promise.all(
      Array.from({ length: rounds }, (_, i) => verified('acct-race', `/race-old-${i}`)),
    );
    // The new callback never answers its challenge.
    stack.receiver.script('/race-new', [200]);
    const answers = await Promise.all(
      ids.flatMap((id) => [
        call('acct-race', 'PUT', `/api/webhooks/${id}`, { callback_url: `${stack.receiver.url}/race-new` }),
        call('acct-race', 'PUT', `/api/webhooks/${id}`, { status: 'active' }),
      ]),
    );
    for (const answer of answers) expect([200, 409]).toContain(answer.statusCode);
    for (const id of ids) {
      const { status, callback_url } = await read('acct-race', id);
      expect({ id, unverifiedActive: status === 'active' && callback_url.endsWith('/race-new') }).toEqual({
        id,
        unverifiedActive: false,
      });
    }
  });
});

describe('an attempt to the old callback failing after the callback moved', () => {
  it('leaves the subscription pending, not disabled', async () => {
    const id = await verified('acct-moving', '/moving-old');
    stack.receiver.script('/moving-old', ['hang']);
    await stack.publisher.publish({
      accountId: 'acct-moving',
      type: 'call.completed',
      data: { call_id: 'm' },
    });
    await waitFor('the attempt at the old callback', () => stack.receiver.at('/moving-old').length === 2);
    stack.receiver.script('/moving-new', [200]);
    const moved = await call('acct-moving', 'PUT', `/api/webhooks/${id}`, {
      callback_url: `${stack.receiver.url}/moving-new`,
    });
    expect(moved.json().status).toBe('pending');
    // The old callback's attempt times out: its delivery fails for good (one attempt), which would
    // disable an active subscription.
    await waitFor('the delivery failed', async () =>
      (await stack.worker.prisma.delivery.findMany({ where: { subscriptionId: id } })).some(
        (d) => d.status === 'failed',
      ),
    );
    expect((await read('acct-moving', id)).status).toBe('pending');
    expect((await call('acct-moving', 'PUT', `/api/webhooks/${id}`, { status: 'active' })).statusCode).toBe(
      409,
    );
  });
});

describe('asking for the challenge again and again', () => {
  it('queues one challenge per subscription and callback while one is under way', async () => {
    stack.receiver.script('/deaf', [200]);
    const { id } = await stack.subscribe('acct-asking', { callback_url: `${stack.receiver.url}/deaf` });
    await waitFor('the first challenge', () => stack.receiver.at('/deaf').length >= 1);
    // Each ask may send the waiting job's next try at once. With two fewer asks than tries (the
    // first try is spent already, and one is kept), the job cannot use up its tries and end during
    // the test, however fast the machine answers them.
    const asks = verificationRetry.attempts - 2;
    for (let i = 0; i < asks; i++)
      expect((await call('acct-asking', 'POST', `/api/webhooks/${id}/verification`)).statusCode).toBe(202);
    const jobs = await stack.api.app.verificationQueue.getJobs([
      'waiting',
      'delayed',
      'active',
      'prioritized',
      'completed',
      'failed',
    ]);
    // The first challenge's job is still under way (sending a try or waiting for the next); none
    // was added beside it.
    const ours = jobs.filter((job) => job.data.subscriptionId === id);
    expect(ours).toHaveLength(1);
    expect(await ours[0]!.getState()).not.toMatch(/^(completed|failed)$/);
  });
});
