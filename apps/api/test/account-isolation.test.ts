/**
 * No account route answers for another account's resources, even when the owner's and an
 * intruder's requests run at once (Prisma batches concurrent `findUnique` calls into one query).
 * Every operation of the OpenAPI document with a path parameter is tried both ways, concurrently,
 * a few rounds in a row.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { v7 as uuidv7 } from 'uuid';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('isolation');
});
afterAll(() => api.close());

interface Owned {
  account: string;
  subscriptionId: string;
  eventId: string;
  deliveryId: string;
  callbackUrl: string;
}

async function ownResources(account: string): Promise<Owned> {
  const callbackUrl = `https://${account}.example.com/hooks`;
  const created = await api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: api.auth(account),
    payload: { callback_url: callbackUrl },
  });
  const subscriptionId = created.json().id as string;
  const eventId = uuidv7();
  await api.app.prisma.event.create({
    data: { id: eventId, accountId: account, type: 'call.started', data: {}, occurredAt: new Date() },
  });
  const deliveryId = uuidv7();
  await api.app.prisma.delivery.create({
    data: { id: deliveryId, eventId, subscriptionId, status: 'failed', attemptsMade: 5 },
  });
  return { account, subscriptionId, eventId, deliveryId, callbackUrl };
}

/** The operations with a path parameter, from the API's own OpenAPI document. */
async function operationsOnOneResource(): Promise<Array<{ method: string; path: string }>> {
  const document = (await api.app.inject({ url: '/docs/json' })).json() as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    path.includes('{id}')
      ? Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path }))
      : [],
  );
}

const bodies: Record<string, (owned: Owned) => unknown> = {
  'PUT /api/webhooks/{id}': (owned) => ({ callback_url: owned.callbackUrl }),
  'POST /api/webhooks/{id}/recover': () => ({ since: '2020-01-01T00:00:00Z' }),
  'POST /api/webhooks/{id}/test-events': () => ({}),
  'POST /api/webhooks/{id}/listen/replies': () => ({
    request_id: 'nobody',
    status: 200,
    error: null,
    body: null,
  }),
  'POST /api/webhooks/{id}/filter-tests': () => ({ payload: { type: 'call.started', data: {} } }),
  'POST /api/webhooks/{id}/transformation-tests': () => ({
    payload: { type: 'call.started', data: {} },
    transformation: 'function handler(webhook) { return webhook; }',
  }),
};

describe('account isolation under concurrent requests', () => {
  it('answers 404 to every intruder, on every route with a resource, while the owners are served', async () => {
    const [a, b] = [await ownResources('acct-owner-a'), await ownResources('acct-owner-b')];
    const operations = await operationsOnOneResource();
    expect(operations.length).toBeGreaterThanOrEqual(12);
    const request = (caller: Owned, target: Owned, method: string, path: string) =>
      api.app.inject({
        method: method as 'GET',
        url: path
          .replace('{id}', path.startsWith('/api/events/') ? target.eventId : target.subscriptionId)
          .replace('{delivery_id}', target.deliveryId),
        headers: api.auth(caller.account),
        ...(bodies[`${method} ${path}`] ? { payload: bodies[`${method} ${path}`]!(target) as object } : {}),
      });

    for (let round = 0; round < 3; round++) {
      const trials = operations.flatMap(({ method, path }) => [
        // Owners never delete here, so that the other requests of the round have their resource.
        ...(method === 'DELETE'
          ? []
          : [
              { caller: a, target: a, method, path },
              { caller: b, target: b, method, path },
            ]),
        { caller: a, target: b, method, path },
        { caller: b, target: a, method, path },
      ]);
      const answers = await Promise.all(trials.map((t) => request(t.caller, t.target, t.method, t.path)));
      trials.forEach((trial, i) => {
        const answer = answers[i]!;
        const what = `${trial.caller.account} ${trial.method} ${trial.path} of ${trial.target.account}`;
        const other = trial.caller === a ? b : a;
        if (trial.caller !== trial.target) {
          expect([what, answer.statusCode]).toEqual([what, 404]);
          expect(answer.body).not.toContain(trial.target.callbackUrl);
        } else {
          expect([what, answer.statusCode === 404]).toEqual([what, false]);
          expect(answer.body).not.toContain(other.subscriptionId);
          expect(answer.body).not.toContain(other.deliveryId);
          expect(answer.body).not.toContain(other.eventId);
        }
      });
    }

    const lists = await Promise.all(
      [a, b, a, b].map((owned) =>
        api.app
          .inject({ url: '/api/webhooks', headers: api.auth(owned.account) })
          .then((r) => ({ owned, r })),
      ),
    );
    for (const { owned, r } of lists)
      expect(r.json().results.map((s: { id: string }) => s.id)).toEqual([owned.subscriptionId]);
    for (const owned of [a, b]) {
      const row = await api.app.prisma.subscription.findUniqueOrThrow({
        where: { id: owned.subscriptionId },
      });
      expect([row.accountId, row.callbackUrl]).toEqual([owned.account, owned.callbackUrl]);
    }
  });
});
