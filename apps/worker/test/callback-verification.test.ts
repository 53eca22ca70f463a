/**
 * Optional callback verification (CALLBACK_VERIFICATION=challenge) through the real services: a
 * new subscription stays `pending`, receiving nothing, until its callback answers the signed
 * challenge; a moved callback proves itself again; the client cannot skip the challenge, and
 * asking again sends a challenge waiting for its next try at once; deliveries waiting for a moved
 * callback's challenge go as soon as it is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { deliveryJobId } from '@webhooks/shared';
import { answersChallenge } from '../src/verification/challenge.js';
import { echoChallenge } from '../../../test/support/challenge.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack('verification', {
    CALLBACK_VERIFICATION: 'challenge',
    DELIVERY_BACKOFF_MS: '100',
  });
});
afterAll(async () => {
  await stack.close();
}, 60_000);

const statusOf = async (account: string, id: string) =>
  (
    await stack.api.app.inject({
      method: 'GET',
      url: `/api/webhooks/${id}`,
      headers: stack.api.auth(account),
    })
  ).json().status as string;

const publish = (accountId: string) =>
  stack.publisher.publish({ accountId, type: 'call.completed', data: { call_id: 'c' } });

describe('a callback that answers its challenge', () => {
  it('makes its subscription active after a signed challenge, and proves itself again when it moves', async () => {
    stack.receiver.script('/echo', [echoChallenge]);
    const created = await stack.subscribe('acct-verify', { callback_url: `${stack.receiver.url}/echo` });
    expect(created.status).toBe('pending');
    await waitFor(
      'the subscription active',
      async () => (await statusOf('acct-verify', created.id)) === 'active',
    );

    const [challenge] = stack.receiver.at('/echo');
    const verified = new Webhook(created.secret).verify(challenge!.body, {
      'webhook-id': String(challenge!.headers['webhook-id']),
      'webhook-timestamp': String(challenge!.headers['webhook-timestamp']),
      'webhook-signature': String(challenge!.headers['webhook-signature']),
    }) as { type: string; data: { challenge: string } };
    expect(verified.type).toBe('webhook.verification');
    expect(verified.data.challenge.length).toBeGreaterThanOrEqual(32);

    await publish('acct-verify');
    await waitFor('the delivery', () => stack.receiver.at('/echo').length === 2);

    stack.receiver.script('/echo-moved', [echoChallenge]);
    const moved = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${created.id}`,
      headers: stack.api.auth('acct-verify'),
      payload: { callback_url: `${stack.receiver.url}/echo-moved` },
    });
    expect(moved.json().status).toBe('pending');
    await waitFor('active again', async () => (await statusOf('acct-verify', created.id)) === 'active');
    expect(stack.receiver.at('/echo-moved')).toHaveLength(1);
  });
});

describe('a callback that does not answer its challenge', () => {
  it('stays pending and receives nothing; the client cannot activate it, only ask again', async () => {
    stack.receiver.script('/deaf', [200]);
    const deaf = await stack.subscribe('acct-deaf', { callback_url: `${stack.receiver.url}/deaf` });
    stack.receiver.script('/heard', [echoChallenge]);
    const heard = await stack.subscribe('acct-deaf', { callback_url: `${stack.receiver.url}/heard` });
    await waitFor(
      'the other subscription active',
      async () => (await statusOf('acct-deaf', heard.id)) === 'active',
    );
    await waitFor('the unanswered challenge', () => stack.receiver.at('/deaf').length >= 1);

    await publish('acct-deaf');
    await waitFor('the delivery to the verified callback', () => stack.receiver.at('/heard').length === 2);
    // One fan-out statement creates every delivery of an event: none was made for the pending one.
    expect(await stack.worker.prisma.delivery.count({ where: { subscriptionId: deaf.id } })).toBe(0);
    expect(await statusOf('acct-deaf', deaf.id)).toBe('pending');

    const activate = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${deaf.id}`,
      headers: stack.api.auth('acct-deaf'),
      payload: { status: 'active' },
    });
    expect(activate.statusCode).toBe(409);
    expect(activate.json()).toMatchObject({ type: '/problems/verification-pending' });
    // Nor by way of disabled: that would make the unverified callback active on re-enable.
    const disable = await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${deaf.id}`,
      headers: stack.api.auth('acct-deaf'),
      payload: { status: 'disabled' },
    });
    expect(disable.statusCode).toBe(409);

    // Its challenge waits out the backoff before its next try; asking again sends that try now.
    const challengeJob = async () =>
      (await stack.api.app.verificationQueue.getJobs(['delayed', 'waiting', 'active', 'completed'])).find(
        (job) => job.data.subscriptionId === deaf.id,
      );
    const waiting = await waitFor('the challenge waiting for its next try', async () => {
      const job = await challengeJob();
      return job !== undefined && (await job.isDelayed()) ? job : undefined;
    });
    stack.receiver.script('/deaf', [echoChallenge]);
    const again = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${deaf.id}/verification`,
      headers: stack.api.auth('acct-deaf'),
    });
    expect(again.statusCode).toBe(202);
    expect(await waiting.getState()).not.toBe('delayed');
    await waitFor('the subscription active', async () => (await statusOf('acct-deaf', deaf.id)) === 'active');
    const twice = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${deaf.id}/verification`,
      headers: stack.api.auth('acct-deaf'),
    });
    expect(twice.statusCode).toBe(409);
  });
});

describe('a delivery waiting for its retry when the callback moves', () => {
  it('goes to the new callback only once it has answered its challenge', async () => {
    stack.receiver.script('/old', [echoChallenge]);
    const sub = await stack.subscribe('acct-move', { callback_url: `${stack.receiver.url}/old` });
    await waitFor('active', async () => (await statusOf('acct-move', sub.id)) === 'active');
    stack.receiver.script('/old', [500]);
    const { id: eventId } = await publish('acct-move');
    // The challenge that made it active was /old's first request; the attempt is the next one.
    const attemptsAtOld = () =>
      stack.receiver.at('/old').filter((r) => JSON.parse(r.body).type !== 'webhook.verification');
    await waitFor('the failed first attempt', () => attemptsAtOld().length === 1);

    const answerAfterMs = 1_000;
    stack.receiver.script('/new', [
      (request) => ({
        ...(echoChallenge(request) as { status: number; body: string }),
        afterMs: answerAfterMs,
      }),
      200,
    ]);
    await stack.api.app.inject({
      method: 'PUT',
      url: `/api/webhooks/${sub.id}`,
      headers: stack.api.auth('acct-move'),
      payload: { callback_url: `${stack.receiver.url}/new` },
    });
    // The retry waits for the new callback's verification, which sends it as soon as it is answered.
    // The first challenge made it active at /old; the second is /new's.
    const challenged = async () =>
      (await stack.api.app.verificationQueue.getJobs(['completed'])).filter(
        (job) => job.data.subscriptionId === sub.id,
      ).length === 2;
    await waitFor('the new callback verified', challenged);
    const deliveries = stack.api.app.deliveryQueues.of(sub.id);
    expect(await deliveries.getJobState(deliveryJobId(eventId, sub.id))).not.toBe('delayed');
    await waitFor('the retry at the new callback', () => stack.receiver.at('/new').length === 2, 30_000);
    const [challenge, retry] = stack.receiver.at('/new');
    expect(JSON.parse(challenge!.body).type).toBe('webhook.verification');
    expect(retry!.at).toBeGreaterThanOrEqual(challenge!.at + answerAfterMs);
    // Nothing went to the old callback once the new one was being verified.
    expect(stack.receiver.at('/old').filter((r) => r.at >= challenge!.at)).toEqual([]);
  });
});

describe('answersChallenge', () => {
  it.each([
    [{ statusCode: 200, responseBody: 'abc' }, true],
    [{ statusCode: 200, responseBody: ' abc\n' }, true],
    [{ statusCode: 200, responseBody: '{"challenge":"abc"}' }, true],
    [{ statusCode: 200, responseBody: '{"challenge":"abd"}' }, false],
    [{ statusCode: 200, responseBody: 'ok' }, false],
    [{ statusCode: 200, responseBody: '["abc"]' }, false],
    [{ statusCode: 201, responseBody: 'abc' }, false],
    [{ statusCode: null, responseBody: null }, false],
  ])('%j answers "abc": %s', (answer, expected) => {
    expect(answersChallenge(answer, 'abc')).toBe(expected);
  });
});

describe('a challenge to a host at its cap', () => {
  const answerAfterMs = 1_500;
  let capped: TestStack;
  beforeAll(async () => {
    capped = await startTestStack('verification-host-cap', {
      CALLBACK_VERIFICATION: 'challenge',
      HOST_MAX_IN_FLIGHT: '1',
    });
  });
  afterAll(() => capped.close(), 60_000);

  it("waits for a slot of the host's cap, as a delivery does", async () => {
    const { receiver } = capped;
    receiver.script('/held', [echoChallenge, { status: 200, afterMs: answerAfterMs }]);
    const holder = await capped.subscribe('acct-cap-holder', { callback_url: `${receiver.url}/held` });
    await waitFor('the holder verified', () => receiver.at('/held').length === 1);
    await waitFor('the holder active', async () => {
      const response = await capped.api.app.inject({
        url: `/api/webhooks/${holder.id}`,
        headers: capped.api.auth('acct-cap-holder'),
      });
      return response.json().status === 'active';
    });
    await capped.publisher.publish({ accountId: 'acct-cap-holder', type: 'call.completed', data: {} });
    await waitFor(
      "the holder's delivery holding the host's only slot",
      () => receiver.at('/held').length === 2,
    );

    receiver.script('/newcomer', [echoChallenge]);
    await capped.subscribe('acct-cap-newcomer', { callback_url: `${receiver.url}/newcomer` });
    await waitFor('the challenge', () => receiver.at('/newcomer').length === 1);
    expect(receiver.at('/newcomer')[0]!.at).toBeGreaterThanOrEqual(
      receiver.at('/held')[1]!.at + answerAfterMs,
    );
  });
});
