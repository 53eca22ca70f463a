/**
 * A delivery log generated in SQL, for the scenarios that need a large one (retention,
 * log-growth): events spread evenly over a time range, each with one delivery to one subscription
 * and four attempts (three 503s, then a 200), as a callback that recovered after three retries
 * leaves them.
 */
import type pg from 'pg';

/**
 * A UUID of time `ts` (a SQL timestamptz expression): its 48-bit ms, then random bits, as
 * UUIDv7 orders (RFC 9562 section 5.7).
 */
export const uuidAt = (ts: string) =>
  `(lpad(to_hex((extract(epoch FROM ${ts}) * 1000)::bigint), 12, '0') || substr(md5(random()::text), 1, 20))::uuid`;

/** The SQL of a delivery's id in the current layout (`delivery_id()` of the partitioning migration). */
export const derivedDeliveryId = 'delivery_id(e.id, $1)';

/** What {@link fillLog} writes. */
export interface LogFill {
  /** Events (and deliveries); four times as many attempts. */
  count: number;
  /** The range the events are spread over, ms since epoch: [fromMs, toMs). */
  fromMs: number;
  toMs: number;
  accountId: string;
  subscriptionId: string;
  /** SQL of a delivery's id from event `e` and `$1` the subscription id ({@link derivedDeliveryId}). */
  deliveryIdSql: string;
}

/**
 * Writes the log in three statements (events, deliveries, attempts). The range must not overlap
 * one filled before: the deliveries are those of the range's events.
 */
export async function fillLog(db: pg.Client, fill: LogFill): Promise<void> {
  const { count, fromMs, toMs, accountId, subscriptionId, deliveryIdSql } = fill;
  await db.query(
    `INSERT INTO events (id, account_id, type, data, occurred_at, created_at)
     SELECT ${uuidAt('ts')}, $4, 'call.completed',
            jsonb_build_object('call_id', md5(i::text), 'duration_s', i % 600, 'from', '+15550100', 'to', '+15550199'),
            ts, ts
     FROM (SELECT i, to_timestamp(($1::bigint + i * (($2::bigint - $1::bigint) / $3::bigint)) / 1000.0) AS ts
           FROM generate_series(0, $3::bigint - 1) AS i) AS t`,
    [fromMs, toMs, count, accountId],
  );
  await db.query(
    `INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, last_status_code, created_at, updated_at)
     SELECT ${deliveryIdSql}, e.id, $1, 'succeeded', 4, 200, e.created_at, e.created_at
     FROM events e WHERE e.created_at >= to_timestamp($2 / 1000.0) AND e.created_at < to_timestamp($3 / 1000.0)`,
    [subscriptionId, fromMs, toMs],
  );
  await db.query(
    `INSERT INTO delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, response_body)
     SELECT d.id, n, d.created_at, 12, CASE WHEN n = 4 THEN 200 ELSE 503 END, 'upstream busy'
     FROM deliveries d CROSS JOIN generate_series(1, 4) AS n
     WHERE d.created_at >= to_timestamp($1 / 1000.0) AND d.created_at < to_timestamp($2 / 1000.0)`,
    [fromMs, toMs],
  );
}

/** Creates the day partitions of the log tables from `days` days ago through today (UTC). */
export async function createPastPartitions(db: pg.Client, days: number): Promise<void> {
  await db.query(
    `SELECT create_log_partitions(day::date)
     FROM generate_series(now() - make_interval(days => $1::int), now(), interval '1 day') AS day`,
    [days],
  );
}
