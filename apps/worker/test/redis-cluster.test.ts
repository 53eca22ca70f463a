/**
 * The whole service on a real three-master Redis Cluster: queues under a hash-tagged
 * prefix, the API's rate limit and idempotency keys, the delivery gates and the reconciler's
 * pipelines all on the cluster.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import {
  startPrivateRedisCluster,
  type PrivateRedisCluster,
} from '../../../scripts/lib/private-redis-cluster.js';
import { startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let cluster: PrivateRedisCluster;
let stack: TestStack;
const rateLimit = 30;

beforeAll(async () => {
  cluster = await startPrivateRedisCluster();
  stack = await startTestStack('cluster', {
    REDIS_CLUSTER_NODES: cluster.nodes,
    DELIVERY_BACKOFF_MS: '100',
    DELIVERY_MAX_ATTEMPTS: '3',
    RATE_LIMIT_PER_MINUTE: String(rateLimit),
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await cluster?.destroy();
});

const publish = (account: string, body: Record<string, unknown>) =>
  stack.api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: stack.api.auth(account),
    payload: body,
  });

describe('on a Redis Cluster', () => {
  it('keeps every queue key under the hash-tagged prefix, so BullMQ scripts run in one slot', async () => {
    expect(stack.api.config.keyPrefix).toBe(`{${stack.api.prefix}}`);
    expect(stack.api.app.redis).toBeInstanceOf(Cluster);
  });

  it('delivers a published event, retrying a failed attempt, and counts it in the delivery log', async () => {
    stack.receiver.script('/flaky', [500, 200]);
    const sub = await stack.subscribe('acct-cluster', { callback_url: `${stack.receiver.url}/flaky` });
    const accepted = await publish('acct-cluster', { type: 'call.started', data: { call_id: 'c-1' } });
    expect(accepted.statusCode).toBe(202);
    const { id } = accepted.json();
    await waitFor('the retried delivery', () => stack.receiver.at('/flaky').length === 2);
    const delivery = await waitFor('success recorded', async () => {
      const row = await stack.worker.prisma.delivery.findFirst({
        where: { eventId: id, subscriptionId: sub.id },
      });
      return row?.status === 'succeeded' && row;
    });
    expect(delivery.attemptsMade).toBe(2);
    expect(stack.receiver.at('/flaky').map((request) => request.headers['webhook-id'])).toEqual([id, id]);
    const shown = await stack.api.app.inject({
      url: `/api/webhooks/${sub.id}`,
      headers: stack.api.auth('acct-cluster'),
    });
    expect(shown.json().delivery.state).toBe('healthy');
  });

  it('delivers what the internal publisher sends', async () => {
    await stack.subscribe('acct-internal', { callback_url: `${stack.receiver.url}/internal` });
    const { id } = await stack.publisher.publish({
      accountId: 'acct-internal',
      type: 'message.sent',
      data: {},
    });
    const [request] = await waitFor(
      'the delivery',
      () => stack.receiver.at('/internal').length === 1 && stack.receiver.at('/internal'),
    );
    expect(request?.headers['webhook-id']).toBe(id);
  });

  it('answers a repeated idempotency key with the first event', async () => {
    const body = { type: 'call.started', data: {}, idempotency_key: 'once' };
    const first = await publish('acct-idem', body);
    const second = await publish('acct-idem', body);
    expect(second.statusCode).toBe(first.statusCode);
    expect(second.json().id).toBe(first.json().id);
  });

  it('counts requests per account across the cluster: over RATE_LIMIT_PER_MINUTE answers 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= rateLimit; i++) {
      const response = await stack.api.app.inject({
        url: '/api/webhooks',
        headers: stack.api.auth('acct-limited'),
      });
      statuses.push(response.statusCode);
    }
    expect(statuses.slice(0, rateLimit).every((status) => status === 200)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });
});
