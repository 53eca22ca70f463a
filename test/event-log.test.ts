/**
 * The events API through the real API, worker, PostgreSQL, Redis and an HTTP receiver: an account
 * lists its events and sees where each went, across its subscriptions; expunging an event's
 * payload empties it everywhere the service keeps it, cancels what was still to be sent, and sends
 * nothing with an empty body.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { deliveryJobId, queueNames } from '@webhooks/shared';
import { Queue } from 'bullmq';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;

beforeAll(async () => {
  // Retries 2 s apart, so that an expunge lands between a failed attempt and its retry.
  stack = await startTestStack('event-log', { DELIVERY_BACKOFF_MS: '2000' });
});
afterAll(() => stack.close(), 60_000);

const get = (account: string, url: string) => stack.api.app.inject({ url, headers: stack.api.auth(account) });

describe('the events API', () => {
  it('lists the account’s events newest first, filtered by type and time, and reads on with before', async () => {
    const account = 'acct-events-list';
    await stack.subscribe(account, { callback_url: `${stack.receiver.url}/list` });
    await stack.subscribe('acct-events-other', { callback_url: `${stack.receiver.url}/list-other` });
    const ids: string[] = [];
    for (const type of ['call.started', 'call.completed', 'call.started']) {
      ids.push((await stack.publisher.publish({ accountId: account, type, data: { n: ids.length } })).id);
    }
    await stack.publisher.publish({ accountId: 'acct-events-other', type: 'call.started', data: {} });
    await waitFor(
      'the events fanned out',
      async () => (await get(account, '/api/events')).json().count === 3,
    );

    const all = (await get(account, '/api/events')).json();
    expect(all.results.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    expect(all.results[0]).toMatchObject({
      type: 'call.started',
      resource_uri: `/api/events/${ids[2]}`,
      payload_expunged: false,
    });

    const started = (await get(account, '/api/events?event_type=call.started')).json();
    expect(started.results.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[0]]);
    const byType = (await get(account, '/api/events?type=call.completed')).json();
    expect(byType.results.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    const after = (await get(account, `/api/events?before=${ids[2]}&page_size=1`)).json();
    expect(after.results.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    expect(after.next).toContain(`before=${ids[2]}`);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await get(account, `/api/events?since=${future}`)).json().count).toBe(0);

    const unknown = await get(account, '/api/events?event_type=call.started,nope.nope');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().errors[0].pointer).toBe('/event_type');
    const unknownType = await get(account, '/api/events?type=nope.nope');
    expect([unknownType.statusCode, unknownType.json().errors[0].pointer]).toEqual([400, '/type']);
    const both = await get(account, '/api/events?type=call.started&event_type=call.completed');
    expect([both.statusCode, both.json().errors[0].pointer]).toEqual([400, '/type']);
    expect((await get('acct-events-other', `/api/events/${ids[0]}`)).statusCode).toBe(404);
  });

  it('shows one event’s delivery to each subscription, with its status', async () => {
    const account = 'acct-events-where';
    stack.receiver.script('/where/failing', [500, 500, 500, 500, 500]);
    const ok = await stack.subscribe(account, { callback_url: `${stack.receiver.url}/where/ok` });
    const failing = await stack.subscribe(account, { callback_url: `${stack.receiver.url}/where/failing` });
    const { id } = await stack.publisher.publish({
      accountId: account,
      type: 'call.completed',
      data: { a: 1 },
    });
    await waitFor(
      'both attempted',
      () => stack.receiver.at('/where/ok').length === 1 && stack.receiver.at('/where/failing').length === 1,
    );

    await waitFor('the log up to date', async () => {
      const detail = (await get(account, `/api/events/${id}`)).json();
      return detail.deliveries.every((d: { attempts_made: number }) => d.attempts_made === 1);
    });
    const detail = (await get(account, `/api/events/${id}`)).json();
    expect(detail.data).toEqual({ a: 1 });
    const bySubscription = Object.fromEntries(
      detail.deliveries.map(
        (d: { subscription: { id: string }; status: string; last_status_code: number }) => [
          d.subscription.id,
          [d.status, d.last_status_code],
        ],
      ),
    );
    expect(bySubscription).toEqual({ [ok.id]: ['succeeded', 200], [failing.id]: ['pending', 500] });
  });
});

describe('payload expunge', () => {
  it('empties the event, cancels its pending delivery, and sends nothing more of it', async () => {
    const account = 'acct-expunge';
    const path = '/expunge/failing';
    // The receiver echoes the data in its answer, which the attempt's record keeps.
    const echo = { status: 500, body: '{"error":"could not store secret x"}' };
    stack.receiver.script(path, [echo, echo, echo, echo, echo]);
    const failing = await stack.subscribe(account, { callback_url: `${stack.receiver.url}${path}` });
    const { id } = await stack.publisher.publish({
      accountId: account,
      type: 'call.completed',
      data: { secret: 'x' },
    });
    // The retry waits as a job; the expunge comes before it runs.
    const deliveries = stack.api.app.deliveryQueues.of(failing.id);
    const retryJob = deliveryJobId(id, failing.id);
    await waitFor(
      'the retry waiting',
      async () => (await (await deliveries.getJob(retryJob))?.isDelayed()) === true,
    );

    const expunged = await stack.api.app.inject({
      method: 'DELETE',
      url: `/api/events/${id}/payload`,
      headers: stack.api.auth(account),
    });
    expect(expunged.statusCode).toBe(204);
    const detail = (await get(account, `/api/events/${id}`)).json();
    expect(detail).toMatchObject({ data: {}, payload_expunged: true });
    expect(detail.deliveries).toMatchObject([
      { status: 'cancelled', last_error: 'expunged', attempts_made: 1 },
    ]);
    const delivery = (await get(account, detail.deliveries[0].resource_uri)).json();
    expect(delivery).toMatchObject({ payload_expunged: true, payload: { data: {} } });
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 500, response_body: null });

    // The retry's job ends without sending: the receiver saw the one attempt, with the data.
    await waitFor('the retry job ended', async () => {
      const job = await deliveries.getJob(retryJob);
      return job === undefined || (await job.isCompleted()) || (await job.isFailed());
    });
    expect(stack.receiver.at(path).map((r) => JSON.parse(r.body).data)).toEqual([{ secret: 'x' }]);

    // Nor does Redis keep the data in the finished fan-out job.
    const events = new Queue(queueNames.events, {
      connection: stack.api.app.redis,
      prefix: stack.api.prefix,
    });
    try {
      expect(await events.getJob(id)).toBeUndefined();
    } finally {
      await events.close();
    }

    const again = await stack.api.app.inject({
      method: 'DELETE',
      url: `/api/events/${id}/payload`,
      headers: stack.api.auth(account),
    });
    expect(again.statusCode).toBe(204);
    const stranger = await stack.api.app.inject({
      method: 'DELETE',
      url: `/api/events/${id}/payload`,
      headers: stack.api.auth('acct-expunge-stranger'),
    });
    expect(stranger.statusCode).toBe(404);

    // Neither a retry nor a recovery sends the cancelled delivery again, with its emptied data.
    const retried = await stack.api.app.inject({
      method: 'POST',
      url: `${detail.deliveries[0].resource_uri}/retry`,
      headers: stack.api.auth(account),
    });
    expect(retried.statusCode).toBe(409);
    expect(retried.json()).toMatchObject({ type: '/problems/payload-expunged' });
    const recovered = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${failing.id}/recover`,
      headers: stack.api.auth(account),
      payload: { since: new Date(Date.now() - 3_600_000).toISOString() },
    });
    expect(recovered.statusCode).toBe(202);
    expect(recovered.json()).toMatchObject({ count: 0 });
    expect((await get(account, detail.deliveries[0].resource_uri)).json()).toMatchObject({
      status: 'cancelled',
    });
  });
});
