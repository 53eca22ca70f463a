import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitFor } from '../scripts/lib/wait.js';

let stack: TestStack;
beforeAll(async () => {
  // One attempt per delivery, so each event is one attempt of the endpoint.
  stack = await startTestStack('health', { DELIVERY_MAX_ATTEMPTS: '1' });
});
afterAll(() => stack.close());

const health = async (account: string, id: string) =>
  stack.api.app.inject({
    method: 'GET',
    url: `/api/webhooks/${id}/health`,
    headers: stack.api.auth(account),
  });

/** Publishes `count` events to `account` and waits until `id` has that many finished deliveries. */
async function publishAndFinish(account: string, id: string, count: number) {
  for (let i = 0; i < count; i += 1) {
    await stack.publisher.publish({
      accountId: account,
      type: 'call.completed',
      data: { call_id: `c-${i}` },
    });
  }
  await waitFor(`${count} finished deliveries`, async () => {
    const stats = (
      await stack.api.app.inject({
        method: 'GET',
        url: `/api/webhooks/${id}/stats`,
        headers: stack.api.auth(account),
      })
    ).json();
    return stats.succeeded + stats.failed === count;
  });
}

describe('GET /api/webhooks/{id}/health', () => {
  it('says an endpoint that confirms every attempt is healthy, with its rate and latency', async () => {
    const { id } = await stack.subscribe('health-ok', { callback_url: `${stack.receiver.url}/ok` });
    expect((await health('health-ok', id)).json()).toMatchObject({
      state: 'idle',
      consecutive_failures: 0,
      last_success_at: null,
      windows: { last_24_hours: { attempts: 0, success_rate: null, latency_ms: null } },
    });

    await publishAndFinish('health-ok', id, 3);
    const body = (await health('health-ok', id)).json();
    expect(body).toMatchObject({
      subscription: { resource_uri: `/api/webhooks/${id}` },
      state: 'healthy',
      consecutive_failures: 0,
      last_failure: null,
      windows: {
        last_15_minutes: { attempts: 3, succeeded: 3, success_rate: 1 },
        last_24_hours: { attempts: 3, succeeded: 3, success_rate: 1 },
      },
    });
    expect(body.last_success_at).not.toBeNull();
    expect(body.windows.last_15_minutes.latency_ms.p95).toBeGreaterThanOrEqual(
      body.windows.last_15_minutes.latency_ms.p50,
    );
    // By hour: 24 of them, ending with the current one, holding the three confirmed attempts.
    const hourly = body.hourly as Array<{ hour: string; succeeded: number; failed: number }>;
    expect(hourly).toHaveLength(24);
    expect(Date.parse(hourly[23]!.hour)).toBeLessThanOrEqual(Date.now());
    expect(Date.now() - Date.parse(hourly[23]!.hour)).toBeLessThan(3_600_000);
    expect(hourly.reduce((sum, h) => sum + h.succeeded, 0)).toBe(3);
    expect(hourly.reduce((sum, h) => sum + h.failed, 0)).toBe(0);
  });

  it('says an endpoint failing every attempt is failing, with its last failure', async () => {
    stack.receiver.script('/down', [500, 500, 500, 500, 500]);
    const { id } = await stack.subscribe('health-down', { callback_url: `${stack.receiver.url}/down` });
    await publishAndFinish('health-down', id, 5);
    const body = (await health('health-down', id)).json();
    expect(body).toMatchObject({
      state: 'failing',
      consecutive_failures: 5,
      last_success_at: null,
      last_failure: { status_code: 500, error: 'http_status' },
      windows: { last_24_hours: { attempts: 5, succeeded: 0, success_rate: 0 } },
    });
  });

  it("answers 404 for another account's subscription", async () => {
    const { id } = await stack.subscribe('health-owner', { callback_url: `${stack.receiver.url}/owner` });
    expect((await health('health-stranger', id)).statusCode).toBe(404);
  });
});
