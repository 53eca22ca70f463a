/**
 * The FIFO head as the ordered hand-over reads it, against the real PostgreSQL: the oldest pending
 * delivery of the subscription with the event after it, and, while a confirmed head's record is
 * being written, the head once that record commits (the confirmed event left out). No worker
 * runs: rows are written directly, and the store is asked.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { createPgPool, type Pool } from '@webhooks/db';
import { createSecretBox, resourceLinks } from '@webhooks/shared';
import { createDeliveryStore, type DeliveryStore } from '../src/delivery/store.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';

let database: TestDatabase;
let pool: Pool;
let store: DeliveryStore;

beforeAll(async () => {
  database = await createTestDatabase('fifo-head-read');
  pool = createPgPool({ databaseUrl: database.url });
  store = createDeliveryStore(pool, {
    secretBox: createSecretBox([]),
    disableAfter: 10,
    links: resourceLinks(''),
    async enqueueNotices() {},
  });
});
afterAll(async () => {
  await pool.end();
  await database.drop();
});

/** A FIFO subscription with a pending delivery of each of `count` events, in acceptance order. */
async function subscriptionWithPending(
  count: number,
): Promise<{ subscriptionId: string; eventIds: string[] }> {
  const subscriptionId = randomUUID();
  await pool.query(
    `INSERT INTO subscriptions (id, account_id, callback_url, secret, ordering, updated_at)
     VALUES ($1, 'acct-head-read', 'https://client.example/hook', 'whsec_plain', 'fifo', now())`,
    [subscriptionId],
  );
  const eventIds = Array.from({ length: count }, () => uuidv7());
  await pool.query(
    `INSERT INTO events (id, account_id, type, data, occurred_at)
     SELECT e, 'acct-head-read', 'call.started', '{}', now() FROM unnest($1::uuid[]) AS e`,
    [eventIds],
  );
  await pool.query(
    `INSERT INTO deliveries (id, event_id, subscription_id, updated_at)
     SELECT delivery_id(e, $2::uuid), e, $2::uuid, now() FROM unnest($1::uuid[]) AS e`,
    [eventIds, subscriptionId],
  );
  return { subscriptionId, eventIds };
}

describe('the FIFO head read', () => {
  it('is the oldest pending delivery, with the event after it', async () => {
    const { subscriptionId, eventIds } = await subscriptionWithPending(3);
    const read = await store.loadHead(subscriptionId);
    expect(read?.head.event.id).toBe(eventIds[0]);
    expect(read?.nextEventId).toBe(eventIds[1]);
  });

  it('leaves out the events whose confirmed attempts are being recorded, as head and as next', async () => {
    const { subscriptionId, eventIds } = await subscriptionWithPending(4);
    const afterFirst = await store.loadHead(subscriptionId, [eventIds[0]!]);
    expect(afterFirst?.head.event.id).toBe(eventIds[1]);
    expect(afterFirst?.nextEventId).toBe(eventIds[2]);
    // An earlier event stored late is the head; the one left out is not its next.
    const afterSecond = await store.loadHead(subscriptionId, [eventIds[1]!]);
    expect(afterSecond?.head.event.id).toBe(eventIds[0]);
    expect(afterSecond?.nextEventId).toBe(eventIds[2]);
    const afterTwo = await store.loadHead(subscriptionId, [eventIds[0]!, eventIds[1]!]);
    expect(afterTwo?.head.event.id).toBe(eventIds[2]);
    expect(afterTwo?.nextEventId).toBe(eventIds[3]);
  });

  it('finds no head, and no next, once the last pending one is left out', async () => {
    const { subscriptionId, eventIds } = await subscriptionWithPending(2);
    expect((await store.loadHead(subscriptionId, [eventIds[0]!]))?.nextEventId).toBeNull();
    expect(await store.loadHead(subscriptionId, eventIds)).toBeNull();
    await pool.query(`UPDATE deliveries SET status = 'succeeded' WHERE event_id = $1`, [eventIds[0]]);
    expect(await store.loadHead(subscriptionId, [eventIds[1]!])).toBeNull();
  });
});
