/**
 * Per-account quotas through the API: the subscriptions an account may have and the bytes of event
 * data it may publish a day, each with its default and a per-account override (ACCOUNT_OVERRIDES).
 * A refusal names the quota, carries `Retry-After` where waiting helps, and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { queueNames } from '@webhooks/shared';
import { secondsUntilUtcMidnight } from '../src/lib/account-quotas.js';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { testRedisUrl } from '../../../test/support/redis.js';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi('quotas', {
    MAX_SUBSCRIPTIONS_PER_ACCOUNT: '2',
    ACCOUNT_PAYLOAD_BYTES_PER_DAY: '100',
    ACCOUNT_OVERRIDES: JSON.stringify({ 'acct-big': { max_subscriptions: 3, payload_bytes_per_day: 1_000 } }),
  });
});
afterAll(async () => {
  await api.close();
});

const create = (account: string) =>
  api.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: api.auth(account),
    payload: { callback_url: 'https://client.example/hooks' },
  });

/** Publishes an event whose `data` serializes to exactly `bytes` bytes (at least 12). */
const publish = (account: string, bytes: number) =>
  api.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: api.auth(account),
    payload: { type: 'call.completed', data: { pad: 'x'.repeat(bytes - 10) } },
  });

describe('the subscriptions quota', () => {
  it('holds an account at MAX_SUBSCRIPTIONS_PER_ACCOUNT, and another at its override, naming max_subscriptions', async () => {
    expect([(await create('acct-small')).statusCode, (await create('acct-small')).statusCode]).toEqual([
      201, 201,
    ]);
    const refused = await create('acct-small');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ type: '/problems/subscription-limit' });
    expect(refused.json().detail).toContain('max_subscriptions');

    for (let i = 0; i < 3; i++) expect((await create('acct-big')).statusCode).toBe(201);
    expect((await create('acct-big')).statusCode).toBe(409);
  });
});

describe('the payload_bytes_per_day quota', () => {
  it('answers 429 naming the quota with Retry-After until midnight UTC, and neither counts nor enqueues the refused event', async () => {
    const events = new Queue(queueNames.events, { connection: { url: testRedisUrl }, prefix: api.prefix });
    try {
      expect((await publish('acct-publisher', 60)).statusCode).toBe(202);
      const before = await events.count();
      const refused = await publish('acct-publisher', 60);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ status: 429, type: '/problems/quota-payload-bytes-per-day' });
      expect(refused.json().detail).toContain('payload_bytes_per_day');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
      expect(await events.count()).toBe(before);
      // The refused 60 bytes were not counted: 40 more still fit in the day's 100.
      expect((await publish('acct-publisher', 40)).statusCode).toBe(202);
      expect((await publish('acct-publisher', 12)).statusCode).toBe(429);
      // Another account has a day of its own, and this one an override.
      expect((await publish('acct-big', 600)).statusCode).toBe(202);
    } finally {
      await events.close();
    }
  });
});

describe('the payload_bytes_per_day quota under concurrent publishes', () => {
  it('weighs publishes made at once in the order they were made: one that does not fit is refused, a smaller one after it still fits', async () => {
    const answers = await Promise.all([
      publish('acct-burst', 60),
      publish('acct-burst', 50),
      publish('acct-burst', 40),
    ]);
    expect(answers.map((answer) => answer.statusCode)).toEqual([202, 429, 202]);
    // 100 of the day's 100 bytes are counted: nothing more fits.
    expect((await publish('acct-burst', 12)).statusCode).toBe(429);
  });

  it('counts each account on its own day when their publishes arrive together', async () => {
    const answers = await Promise.all([
      publish('acct-together-a', 90),
      publish('acct-together-b', 90),
      publish('acct-together-a', 20),
      publish('acct-big', 300),
    ]);
    expect(answers.map((answer) => answer.statusCode)).toEqual([202, 202, 429, 202]);
  });
});

describe('secondsUntilUtcMidnight', () => {
  it('counts the seconds left in the UTC day, at least one', () => {
    expect(secondsUntilUtcMidnight(new Date('2026-11-22T00:00:00.000Z'))).toBe(86_400);
    expect(secondsUntilUtcMidnight(new Date('2026-11-22T23:59:30.000Z'))).toBe(30);
    expect(secondsUntilUtcMidnight(new Date('2026-11-22T23:59:59.999Z'))).toBe(1);
  });
});
