/**
 * The delivery log partitioned by day, on the file's own database: where deliveries are stored,
 * which partitions the API's lookups read (their plans), the days created ahead, and retention
 * dropping whole days.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { loadSql } from '../src/delivery/store.js';
import { recordSql } from '../src/delivery/attempt-record.js';
import { firstIdAt, timeIdRange } from '@webhooks/shared';
import { createLogPartitions, logPartitionDays, utcDay } from '../src/log-partitions.js';
import { deleteExpiredRows } from '../src/retention.js';
import { afterStartupRetention, startTestStack, type TestStack } from '../../../test/support/stack.js';
import { waitFor } from '../../../scripts/lib/wait.js';

const dayMs = 86_400_000;
const partitionOf = (table: string, at: number) => `${table}_p${utcDay(new Date(at)).replace(/-/g, '')}`;

let stack: TestStack;
let db: pg.Client;
beforeAll(async () => {
  stack = await startTestStack('partitions');
  await afterStartupRetention(stack);
  db = new pg.Client({ connectionString: stack.api.database.url });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await stack.close();
});

/** The plan of `sql` on `client` (default the file's), run: EXPLAIN (ANALYZE, FORMAT JSON). */
async function explainRun(sql: string, params: unknown[] = [], client = db): Promise<unknown> {
  const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
    params,
  );
  return rows[0]!['QUERY PLAN'];
}

/** A plan node that names the relation it reads or writes. */
type RelationNode = Record<string, unknown> & { 'Relation Name': string };

/** Every node of a plan that names a relation. */
function relationNodes(plan: unknown): RelationNode[] {
  const found: RelationNode[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (typeof record['Relation Name'] === 'string') found.push(record as RelationNode);
      Object.values(record).forEach(walk);
    }
  };
  walk(plan);
  return found;
}

/**
 * The tables an EXPLAIN (ANALYZE) of `sql` on `client` (default the file's) shows read: partitions
 * pruned at plan or start-up time are absent.
 */
async function tablesRead(sql: string, params: unknown[] = [], client = db): Promise<string[]> {
  const names = relationNodes(await explainRun(sql, params, client)).map((node) => node['Relation Name']);
  return [...new Set(names)].sort();
}

/** Stores an event of `at` (ms) with its delivery to `subscriptionId` and one attempt, as the worker would have then. */
async function storeDeliveryAt(subscriptionId: string, at: number) {
  const eventId = uuidv7({ msecs: at });
  await db.query(
    `INSERT INTO events (id, account_id, type, data, occurred_at, created_at)
     VALUES ($1, 'acct-log', 'call.started', '{}', to_timestamp($2 / 1000.0), to_timestamp($2 / 1000.0))`,
    [eventId, at],
  );
  const {
    rows: [delivery],
  } = await db.query<{ id: string }>(
    `INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, created_at, updated_at)
     VALUES (delivery_id($1, $2), $1, $2, 'succeeded', 1, to_timestamp($3 / 1000.0), now()) RETURNING id::text`,
    [eventId, subscriptionId, at],
  );
  await db.query(
    `INSERT INTO delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code)
     VALUES ($1, 1, to_timestamp($2 / 1000.0), 5, 200)`,
    [delivery!.id, at],
  );
  return { eventId, deliveryId: delivery!.id };
}

const createDays = async (from: number, to: number) => {
  for (let at = from; at <= to; at += dayMs) {
    await db.query('SELECT create_log_partitions($1::date)', [utcDay(new Date(at))]);
  }
};

describe('the delivery log partitioned by day', () => {
  it("stores a delivery and its attempts in its event's day, under an id derived from the event and the subscription", async () => {
    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/log` });
    const { id: eventId } = await stack.publisher.publish({
      accountId: 'acct-log',
      type: 'call.started',
      data: { call_id: 'c-1' },
    });
    const delivery = await waitFor('the delivery', async () => {
      const row = await stack.api.app.prisma.delivery.findFirst({
        where: { eventId, subscriptionId: sub.id, status: 'succeeded' },
      });
      return row ?? undefined;
    });
    const acceptedAt = parseInt(eventId.replace(/-/g, '').slice(0, 12), 16);
    const { rows } = await db.query<{ table: string; id: string }>(
      `SELECT tableoid::regclass::text AS table, id::text FROM events WHERE id = $1
       UNION ALL SELECT tableoid::regclass::text, id::text FROM deliveries WHERE id = $2
       UNION ALL SELECT tableoid::regclass::text, delivery_id::text FROM delivery_attempts WHERE delivery_id = $2`,
      [eventId, delivery.id],
    );
    expect(rows.map((row) => row.table)).toEqual([
      partitionOf('events', acceptedAt),
      partitionOf('deliveries', acceptedAt),
      partitionOf('delivery_attempts', acceptedAt),
    ]);
    const {
      rows: [derived],
    } = await db.query<{ id: string }>('SELECT delivery_id($1, $2)::text AS id', [eventId, sub.id]);
    expect(delivery.id).toBe(derived!.id);
    expect(delivery.id.slice(0, 13)).toBe(eventId.slice(0, 13));
  });

  it("reads one day for a lookup by id, and only the cursor's day and earlier for a page read on from a delivery", async () => {
    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/plans` });
    const now = Date.now();
    await createDays(now - 5 * dayMs, now);
    const threeDaysAgo = await storeDeliveryAt(sub.id, now - 3 * dayMs);
    await storeDeliveryAt(sub.id, now - 4 * dayMs);
    await storeDeliveryAt(sub.id, now - dayMs);
    const day = now - 3 * dayMs;

    expect(await tablesRead('SELECT * FROM events WHERE id = $1', [threeDaysAgo.eventId])).toEqual([
      partitionOf('events', day),
    ]);
    expect(await tablesRead('SELECT * FROM deliveries WHERE id = $1', [threeDaysAgo.deliveryId])).toEqual([
      partitionOf('deliveries', day),
    ]);
    expect(
      await tablesRead('SELECT * FROM delivery_attempts WHERE delivery_id = $1', [threeDaysAgo.deliveryId]),
    ).toEqual([partitionOf('delivery_attempts', day)]);

    // The list's query (deliveries.ts): newest first by id, after the `before` delivery.
    const page = await tablesRead(
      'SELECT * FROM deliveries WHERE subscription_id = $1 AND id < $2 ORDER BY id DESC LIMIT 20',
      [sub.id, threeDaysAgo.deliveryId],
    );
    expect(page).toContain(partitionOf('deliveries', day));
    expect(page).not.toContain(partitionOf('deliveries', now - dayMs));
    expect(page).not.toContain(partitionOf('deliveries', now));

    const listed = await stack.api.app.inject({
      url: `${sub.resource_uri}/deliveries?before=${threeDaysAgo.deliveryId}`,
      headers: stack.api.auth('acct-log'),
    });
    expect(listed.json().results).toHaveLength(1);
  });

  it('reads only the days an events list covers, and one day for an event with its deliveries', async () => {
    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/event-plans` });
    const now = Date.now();
    await createDays(now - 5 * dayMs, now);
    const twoDaysAgo = await storeDeliveryAt(sub.id, now - 2 * dayMs);
    await storeDeliveryAt(sub.id, now - 4 * dayMs);
    await storeDeliveryAt(sub.id, now);

    // The list's query (event-log.ts): the account's events between the id bounds of since and
    // until (firstIdAt), newest first.
    const since = firstIdAt(new Date(now - 3 * dayMs));
    const until = firstIdAt(new Date(now - dayMs));
    const listed = await tablesRead(
      `SELECT * FROM events WHERE account_id = 'acct-log' AND id >= $1 AND id < $2 ORDER BY id DESC LIMIT 20`,
      [since, until],
    );
    expect(listed).toContain(partitionOf('events', now - 2 * dayMs));
    for (const other of [now - 4 * dayMs, now]) expect(listed).not.toContain(partitionOf('events', other));
    const [low, high] = timeIdRange([twoDaysAgo.eventId]);
    expect(
      await tablesRead('SELECT * FROM deliveries WHERE event_id = $1 AND id >= $2 AND id <= $3', [
        twoDaysAgo.eventId,
        low,
        high,
      ]),
    ).toEqual([partitionOf('deliveries', now - 2 * dayMs)]);

    const sinceIso = new Date(now - 3 * dayMs).toISOString();
    const untilIso = new Date(now - dayMs).toISOString();
    const page = await stack.api.app.inject({
      url: `/api/events?since=${sinceIso}&until=${untilIso}`,
      headers: stack.api.auth('acct-log'),
    });
    const ids = page.json().results.map((e: { id: string }) => e.id);
    expect(ids).toContain(twoDaysAgo.eventId);
    expect(ids.every((id: string) => id >= since && id < until)).toBe(true);
    const detail = await stack.api.app.inject({
      url: `/api/events/${twoDaysAgo.eventId}`,
      headers: stack.api.auth('acct-log'),
    });
    expect(detail.json().deliveries.map((d: { id: string }) => d.id)).toEqual([twoDaysAgo.deliveryId]);
  });

  it("reads one day of each log table when the worker's batch load runs from a cached plan", async () => {
    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/load-plan` });
    const now = Date.now();
    await createDays(now - 5 * dayMs, now);
    const stored = await storeDeliveryAt(sub.id, now - 2 * dayMs);
    await storeDeliveryAt(sub.id, now - 4 * dayMs);
    await storeDeliveryAt(sub.id, now);
    // The plan PostgreSQL keeps for a named statement after five calls, built at once.
    const session = new pg.Client({ connectionString: stack.api.database.url });
    await session.connect();
    try {
      await session.query('SET plan_cache_mode = force_generic_plan');
      await session.query(`PREPARE load_plan(uuid[], uuid[], uuid, uuid) AS ${loadSql}`);
      const args = [`{${stored.eventId}}`, `{${sub.id}}`, ...timeIdRange([stored.eventId])]
        .map((value) => pg.escapeLiteral(value))
        .join(', ');
      const found = await session.query<{ id: string }>(`EXECUTE load_plan(${args})`);
      expect(found.rows.map((row) => row.id)).toEqual([stored.deliveryId]);
      expect(await tablesRead(`EXECUTE load_plan(${args})`, [], session)).toEqual(
        [
          partitionOf('deliveries', now - 2 * dayMs),
          partitionOf('events', now - 2 * dayMs),
          'subscriptions',
        ].sort(),
      );
    } finally {
      await session.end();
    }
  });

  it("reads only its batch's deliveries when the worker's attempt record runs from a cached plan", async () => {
    // Five deliveries of one event: one millisecond's ids, so the batch's range holds all five.
    const subscriptions = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/record-plan-${i}` }),
      ),
    );
    const at = Date.now();
    const eventId = uuidv7({ msecs: at });
    await db.query(
      `INSERT INTO events (id, account_id, type, data, occurred_at) VALUES ($1, 'acct-log', 'call.started', '{}', now())`,
      [eventId],
    );
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO deliveries (id, event_id, subscription_id, status, updated_at)
       SELECT delivery_id($1, s), $1, s, 'succeeded', now() FROM unnest($2::uuid[]) AS s RETURNING id::text`,
      [eventId, subscriptions.map((sub) => sub.id)],
    );
    const ids = rows.map((row) => row.id).sort();
    const batch = [ids[0]!, ids[4]!];
    const both = (value: string) => `{${value},${value}}`;
    const args = [
      `{${batch.join(',')}}`,
      both('1'),
      both(`"${new Date(at).toISOString()}"`),
      both('5'),
      both('200'),
      both('NULL'),
      both('NULL'),
      both('NULL'),
      both('10'),
      both('succeeded'),
      both('NULL'),
      '{}',
      '{}',
      '{}',
      '5',
      'subscription.disabled',
      '/api/webhooks/',
      ...timeIdRange(batch),
    ]
      .map((value) => pg.escapeLiteral(value))
      .join(', ');
    const session = new pg.Client({ connectionString: stack.api.database.url });
    await session.connect();
    try {
      // The plan PostgreSQL keeps for a named statement after five calls, built at once.
      await session.query('SET plan_cache_mode = force_generic_plan');
      await session.query(
        `PREPARE record_plan(uuid[], int[], timestamptz[], int[], int[], text[], text[], text[], int[], text[],
           timestamptz[], uuid[], boolean[], int[], int, text, text, uuid, uuid) AS ${recordSql}`,
      );
      await session.query('BEGIN');
      const plan = await explainRun(`EXECUTE record_plan(${args})`, [], session);
      const recorded = await session.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])',
        [batch],
      );
      await session.query('ROLLBACK');
      expect(recorded.rows[0]!.n).toBe(2);
      const deliveriesRead = relationNodes(plan)
        .filter(
          (node) =>
            node['Relation Name'].startsWith('deliveries_') && String(node['Node Type']).includes('Scan'),
        )
        .reduce((sum, node) => sum + Number(node['Actual Rows']) * Number(node['Actual Loops']), 0);
      expect(deliveriesRead).toBe(2);
    } finally {
      await session.end();
    }
  });

  it('creates the days ahead once, and leaves a day whose rows already sit in the default partition to them', async () => {
    const later = Date.now() + 60 * dayMs;
    const first = await createLogPartitions(stack.api.app.prisma, new Date(later));
    expect(first.created).toEqual(Array.from({ length: 8 }, (_, i) => utcDay(new Date(later + i * dayMs))));
    expect(first.failed).toEqual([]);
    expect(await createLogPartitions(stack.api.app.prisma, new Date(later))).toEqual({
      created: [],
      failed: [],
    });

    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/ahead` });
    const beyond = later + 10 * dayMs;
    const early = await storeDeliveryAt(sub.id, beyond);
    const next = await createLogPartitions(stack.api.app.prisma, new Date(beyond));
    expect(next.failed.map((f) => f.day)).toEqual([utcDay(new Date(beyond))]);
    expect(next.created).toHaveLength(7);
    const { rows } = await db.query<{ table: string }>(
      'SELECT tableoid::regclass::text AS table FROM deliveries WHERE id = $1',
      [early.deliveryId],
    );
    expect(rows).toEqual([{ table: 'deliveries_default' }]);
  });

  it('records attempts while the days ahead are created, sending each delivery once', async () => {
    const sub = await stack.subscribe('acct-ddl', { callback_url: `${stack.receiver.url}/ddl` });
    const ids: string[] = [];
    const publishing = (async () => {
      for (let i = 0; i < 60; i++) {
        const { id } = await stack.publisher.publish({
          accountId: 'acct-ddl',
          type: 'call.started',
          data: { i },
        });
        ids.push(id);
      }
    })();
    // Days far ahead, eight at a time, their partitions created while those attempts are recorded.
    for (let round = 0; round < 15; round++)
      await createLogPartitions(stack.api.app.prisma, new Date(Date.now() + (400 + round * 8) * dayMs));
    await publishing;
    await waitFor('every delivery confirmed', async () => {
      const done = await stack.worker.prisma.delivery.count({
        where: { subscriptionId: sub.id, status: 'succeeded' },
      });
      return done === ids.length;
    });
    const received = stack.receiver.at('/ddl').map((request) => String(request.headers['webhook-id']));
    expect(received.sort()).toEqual([...ids].sort());
  });

  it('gives up a day whose table is locked past the lock timeout, and creates it at the next run', async () => {
    const later = new Date(Date.now() + 200 * dayMs);
    const reader = new pg.Client({ connectionString: stack.api.database.url });
    await reader.connect();
    try {
      // A long transaction that read the log holds a lock the partition's creation must wait for.
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM deliveries');
      const blocked = await createLogPartitions(stack.api.app.prisma, later);
      expect(blocked.created).toEqual([]);
      expect(blocked.failed.map((f) => f.reason)).toEqual(
        Array.from({ length: 8 }, () => expect.stringContaining('lock timeout')),
      );
      await reader.query('COMMIT');
      expect((await createLogPartitions(stack.api.app.prisma, later)).created).toHaveLength(8);
    } finally {
      await reader.end();
    }
  });

  it('drops the days past RETENTION_DAYS whole, keeps the rest, and deletes old rows of the default partition', async () => {
    const sub = await stack.subscribe('acct-log', { callback_url: `${stack.receiver.url}/retention` });
    const now = Date.now();
    await createDays(now - 40 * dayMs, now - 29 * dayMs);
    const expired = await storeDeliveryAt(sub.id, now - 35 * dayMs);
    const kept = await storeDeliveryAt(sub.id, now - 29 * dayMs);
    // An event id that is no UUIDv7 (a publisher may choose ids): it lands in the default partition.
    const foreignEvent = 'f0000000-0000-4000-8000-000000000001';
    await db.query(
      `INSERT INTO events (id, account_id, type, data, occurred_at, created_at)
       VALUES ($1, 'acct-log', 'call.started', '{}', now(), now() - interval '31 days')`,
      [foreignEvent],
    );
    await db.query(
      `INSERT INTO deliveries (id, event_id, subscription_id, status, created_at, updated_at)
       VALUES (delivery_id($1, $2), $1, $2, 'succeeded', now() - interval '31 days', now())`,
      [foreignEvent, sub.id],
    );

    const report = await deleteExpiredRows(stack.api.app.prisma, { retentionDays: 30, now: new Date(now) });

    expect(report.partitionsDropped).toEqual(
      Array.from({ length: 10 }, (_, i) => utcDay(new Date(now - (40 - i) * dayMs))),
    );
    expect([report.attempts, report.deliveries, report.events]).toEqual([0, 1, 1]);
    const days = await logPartitionDays(stack.api.app.prisma);
    expect(days[0]).toBe(utcDay(new Date(now - 30 * dayMs)));
    const count = async (sql: string, ids: string[]) =>
      Number((await db.query<{ n: string }>(sql, [ids])).rows[0]!.n);
    expect(
      await count('SELECT count(*) AS n FROM events WHERE id = ANY($1::uuid[])', [
        expired.eventId,
        kept.eventId,
        foreignEvent,
      ]),
    ).toBe(1);
    expect(
      await count('SELECT count(*) AS n FROM deliveries WHERE id = ANY($1::uuid[])', [
        expired.deliveryId,
        kept.deliveryId,
      ]),
    ).toBe(1);
    expect(
      await count('SELECT count(*) AS n FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])', [
        expired.deliveryId,
        kept.deliveryId,
      ]),
    ).toBe(1);
    const read = await stack.api.app.inject({
      url: `${sub.resource_uri}/deliveries/${kept.deliveryId}`,
      headers: stack.api.auth('acct-log'),
    });
    expect(read.json().attempts).toHaveLength(1);
  });
});
