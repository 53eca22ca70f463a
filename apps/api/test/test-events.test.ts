/**
 * What the portal needs of the API: a test event of a catalogue type, sent to one
 * subscription only with the catalogue's example data, and the recent health of a subscription.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('test-events', { DELIVERY_MAX_ATTEMPTS: '1' });
});
afterAll(() => stack.close());

const call = (account: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
  stack.api.app.inject({
    method,
    url,
    headers: stack.api.auth(account),
    ...(payload === undefined ? {} : { payload }),
  });

describe('POST /api/webhooks/{id}/test-events', () => {
  it('delivers the example of the type to that subscription only, and logs it as a delivery', async () => {
    const target = await stack.subscribe('tester', { callback_url: `${stack.receiver.url}/target` }, 'calls');
    const sibling = await stack.subscribe(
      'tester',
      { callback_url: `${stack.receiver.url}/sibling` },
      'calls',
    );
    const sent = await call('tester', 'POST', `/api/webhooks/${target.id}/test-events`, {
      type: 'call.failed',
    });
    expect(sent.statusCode).toBe(202);
    await waitFor('the test event at its subscription', () => stack.receiver.at('/target').length === 1);
    const received = JSON.parse(stack.receiver.at('/target')[0]!.body);
    expect(received).toMatchObject({
      type: 'call.failed',
      data: stack.api.config.catalogue.entry('call.failed')!.example,
    });
    expect(stack.receiver.at('/target')[0]!.headers['webhook-id']).toBe(sent.json().id);
    const log = await call('tester', 'GET', `/api/webhooks/${target.id}/deliveries`);
    expect(log.json().results).toMatchObject([{ event_id: sent.json().id, type: 'call.failed' }]);
    // The fan-out made every delivery of the event at once: the sibling, receiving the same type, got none.
    const siblingLog = await call('tester', 'GET', `/api/webhooks/${sibling.id}/deliveries`);
    expect(siblingLog.json().count).toBe(0);
    expect(stack.receiver.at('/sibling')).toEqual([]);
  });

  it("sends the subscription's first type by default, operational ones included", async () => {
    const ops = await stack.subscribe('tester', { callback_url: `${stack.receiver.url}/ops` }, 'operational');
    const sent = await stack.api.app.inject({
      method: 'POST',
      url: `/api/webhooks/${ops.id}/test-events`,
      headers: stack.api.auth('tester'),
    });
    expect(sent.statusCode).toBe(202);
    await waitFor('the operational test event', () => stack.receiver.at('/ops').length === 1);
    expect(JSON.parse(stack.receiver.at('/ops')[0]!.body).data).toEqual(
      stack.api.config.catalogue.entry('subscription.disabled')!.example,
    );
  });

  it('refuses a type the subscription does not receive, naming the field, and sends nothing', async () => {
    const calls = await stack.subscribe('tester', { callback_url: `${stack.receiver.url}/refused` }, 'calls');
    for (const type of ['message.sent', 'no.such']) {
      const response = await call('tester', 'POST', `/api/webhooks/${calls.id}/test-events`, { type });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors).toEqual([expect.objectContaining({ pointer: '/type' })]);
    }
    const log = await call('tester', 'GET', `/api/webhooks/${calls.id}/deliveries`);
    expect(log.json().count).toBe(0);
  });

  it("answers 404 for another account's subscription and 409 for a disabled one", async () => {
    const other = await stack.subscribe('someone-else', { callback_url: `${stack.receiver.url}/other` });
    expect((await call('tester', 'POST', `/api/webhooks/${other.id}/test-events`, {})).statusCode).toBe(404);
    const paused = await stack.subscribe('tester', { callback_url: `${stack.receiver.url}/paused` });
    await call('tester', 'PUT', `/api/webhooks/${paused.id}`, { status: 'disabled' });
    const response = await call('tester', 'POST', `/api/webhooks/${paused.id}/test-events`, {});
    expect(response.statusCode).toBe(409);
  });
});

describe('GET /api/webhooks/{id}/stats', () => {
  it('counts the last 24 hours of deliveries by status, with the success rate of the finished ones', async () => {
    const sub = await stack.subscribe('stats', { callback_url: `${stack.receiver.url}/stats` }, 'calls');
    const empty = await call('stats', 'GET', `/api/webhooks/${sub.id}/stats`);
    expect(empty.json()).toMatchObject({ succeeded: 0, failed: 0, pending: 0, success_rate: null });
    stack.receiver.script('/stats', [200, 500, 200, 200]);
    for (let i = 0; i < 4; i++) {
      await call('stats', 'POST', `/api/webhooks/${sub.id}/test-events`, {});
      await waitFor(`test event ${i + 1}`, () => stack.receiver.at('/stats').length === i + 1);
    }
    const stats = await waitFor('four finished deliveries', async () => {
      const body = (await call('stats', 'GET', `/api/webhooks/${sub.id}/stats`)).json();
      return body.succeeded + body.failed === 4 ? body : undefined;
    });
    expect(stats).toMatchObject({ succeeded: 3, failed: 1, pending: 0, cancelled: 0, success_rate: 0.75 });
    const other = await call('tester', 'GET', `/api/webhooks/${sub.id}/stats`);
    expect(other.statusCode).toBe(404);
  });
});
