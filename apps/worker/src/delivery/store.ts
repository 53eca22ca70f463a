/**
 * The delivery path's reads and writes. Each is one SQL statement, sent with `pg` directly (the
 * hot path: see `createPgPool` in @webhooks/db), over a batch of concurrent jobs (see `batcher` in
 * @webhooks/shared for why); a single statement is atomic in PostgreSQL, data-modifying CTEs
 * included, so every write stays all-or-nothing.
 *
 * The statements in this file, and the fan-out's and the FIFO heads', are named, so each
 * connection prepares them once. An unnamed statement is planned at every call, and planning a join over the
 * log's day partitions cost about four times its execution (1.4 ms against 0.35 ms for a load of
 * 20 deliveries over 9 partitions). After five calls PostgreSQL keeps a generic plan, which
 * prunes the partitions when it runs instead.
 */
import type { Pool } from '@webhooks/db';
import {
  batcher,
  operationalKind,
  receivesEventTypeSql,
  type BatchOptions,
  type ResourceLinks,
  type SecretBox,
} from '@webhooks/shared';
import { timeIdRange } from '../log-partitions.js';
import type { AttemptResult } from './attempt.js';
import { failureRunChanges, failureRunEffect } from './auto-disable.js';
import type { DeliveryOutcome } from './outcome.js';
import { isFifoHeadSql } from './fifo-head.js';

/** A delivery with what its attempt needs of the event and the subscription. */
export interface LoadedDelivery {
  id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attemptsMade: number;
  /** The round it is in (0 the first; a retry or recovery starts attempts made + 1). */
  round: number;
  event: { id: string; type: string; data: Record<string, unknown>; occurredAt: Date };
  subscription: {
    id: string;
    callbackUrl: string;
    webhookId: string | null;
    kind: string | null;
    /** `pending` while its callback has not answered its challenge (CALLBACK_VERIFICATION). */
    status: 'active' | 'disabled' | 'pending';
    secret: string;
    previousSecret: string | null;
    previousSecretExpiresAt: Date | null;
    consecutiveFailures: number;
    /** Attempts a second at most (`rate_limit`), null for no limit. */
    rateLimit: number | null;
    /** `fifo`: one delivery at a time, in acceptance order (fifo.ts). */
    ordering: 'none' | 'fifo';
    accountId: string;
  };
  /**
   * For a FIFO subscription, whether this is its head (no earlier pending delivery); always true
   * otherwise.
   */
  isHead: boolean;
}

/** What {@link DeliveryStore.record} writes for one attempt. */
export interface AttemptRecord {
  delivery: LoadedDelivery;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  /** The in-flight limit the attempt was sent under (shows throttling in the delivery log). */
  inFlightLimit: number;
}

/** A delivery row's key and round: what names its job. */
export interface DeliveryKey {
  eventId: string;
  subscriptionId: string;
  round: number;
}

/** Reads and writes of the `deliveries` processor. */
export interface DeliveryStore {
  /** The delivery of `eventId` to `subscriptionId`, or null when it no longer exists (subscription deleted). */
  load(key: { eventId: string; subscriptionId: string }): Promise<LoadedDelivery | null>;
  /** Marks a pending delivery cancelled (its subscription is disabled): nothing more is tried for it. */
  cancel(deliveryId: string): Promise<void>;
  /**
   * Gives up a delivery still pending in `key.round` as `expired` (not sent within
   * DELIVERY_MAX_AGE); its subscription's run of failures is left alone.
   */
  expire(key: DeliveryKey): Promise<void>;
  /**
   * Records an attempt, the delivery's new state and, when the delivery ends, its subscription's
   * run of failures ({@link failureRunChanges}), before the job is acknowledged. A subscription
   * this disables gets a `subscription.disabled` event, stored with its deliveries in the same
   * statement; their jobs are handed to `enqueueNotices`.
   *
   * @throws pg's errors; the processor then defers the job without using an attempt
   */
  record(record: AttemptRecord): Promise<void>;
}

/** What the store needs besides its database. */
export interface DeliveryStoreOptions {
  /** SUBSCRIPTION_DISABLE_AFTER. */
  disableAfter: number;
  /** Opens the stored signing secrets (SECRETS_ENCRYPTION_KEY). */
  secretBox: SecretBox;
  /** Addresses under PUBLIC_BASE_URL, for the `resource_uri` of `subscription.disabled` events. */
  links: ResourceLinks;
  /**
   * Enqueues the deliveries of `subscription.disabled` events once they are stored. It must not
   * throw: a delivery it could not enqueue stays pending, and the reconciler re-drives it.
   */
  enqueueNotices(deliveries: DeliveryKey[]): Promise<void>;
  batch?: BatchOptions;
}

/**
 * What an attempt needs of a delivery's subscription, as the load selects it and the fan-out's
 * statement returns it for the deliveries it creates ({@link createdDelivery}).
 */
export type SubscriptionRow = {
  subscription_id: string;
  callback_url: string;
  webhook_id: string | null;
  kind: string | null;
  subscription_status: 'active' | 'disabled' | 'pending';
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  rate_limit: number | null;
  ordering: 'none' | 'fifo';
  account_id: string;
};

/** {@link SubscriptionRow}'s columns but its id: each one's expression over `s` (subscriptions). */
const subscriptionColumns = {
  callback_url: 's.callback_url',
  webhook_id: 's.webhook_id',
  kind: 's.kind',
  subscription_status: 's.status::text',
  secret: 's.secret',
  previous_secret: 's.previous_secret',
  previous_secret_expires_at: 's.previous_secret_expires_at',
  consecutive_failures: 's.consecutive_failures',
  rate_limit: 's.rate_limit',
  ordering: 's.ordering',
  account_id: 's.account_id',
} satisfies Record<Exclude<keyof SubscriptionRow, 'subscription_id'>, string>;

/** `<expression> AS <column>` for each of {@link SubscriptionRow}'s columns but its id, over `s`. */
export const subscriptionColumnsSql = Object.entries(subscriptionColumns)
  .map(([column, expression]) => `${expression} AS ${column}`)
  .join(', ');

/** The same columns by name under `alias`, for a statement that carries them through a CTE. */
export const subscriptionColumnsOf = (alias: string): string =>
  Object.keys(subscriptionColumns)
    .map((column) => `${alias}.${column}`)
    .join(', ');

/** A NULL for each of {@link subscriptionColumnsOf}'s columns: a UNION's branch that has none. */
export const subscriptionColumnsNull = Object.keys(subscriptionColumns)
  .map(() => 'NULL')
  .join(', ');

type Row = SubscriptionRow & {
  id: string;
  status: LoadedDelivery['status'];
  attempts_made: number;
  round: number;
  event_id: string;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date;
};

/**
 * A delivery the fan-out has just created, as {@link DeliveryStore.load} would read it back:
 * pending, round 0, no attempt made, with `event` as published and `subscription` as the fan-out's
 * statement read it. An inline first attempt starts from it (`RoundRef.loaded`), one statement and
 * one round trip to PostgreSQL fewer than a load.
 *
 * @param id the delivery's id (`delivery_id(event_id, subscription_id)` in SQL)
 * @throws the secret box's error when no configured key opens the stored signing secret
 */
export function createdDelivery(
  id: string,
  event: LoadedDelivery['event'],
  subscription: SubscriptionRow,
  secretBox: SecretBox,
): LoadedDelivery {
  const row: Row = {
    ...subscription,
    id,
    status: 'pending',
    attempts_made: 0,
    round: 0,
    event_id: event.id,
    type: event.type,
    data: event.data,
    occurred_at: event.occurredAt,
  };
  return toLoaded(row, true, secretBox);
}

/** The row with its secrets opened; a secret no configured key opens fails this delivery alone. */
function toLoaded(row: Row, isHead: boolean, secretBox: SecretBox): LoadedDelivery {
  return {
    id: row.id,
    status: row.status,
    attemptsMade: row.attempts_made,
    round: row.round,
    event: { id: row.event_id, type: row.type, data: row.data, occurredAt: row.occurred_at },
    subscription: {
      id: row.subscription_id,
      callbackUrl: row.callback_url,
      webhookId: row.webhook_id,
      kind: row.kind,
      status: row.subscription_status,
      secret: secretBox.open(row.secret, row.subscription_id),
      previousSecret:
        row.previous_secret === null ? null : secretBox.open(row.previous_secret, row.subscription_id),
      previousSecretExpiresAt: row.previous_secret_expires_at,
      consecutiveFailures: row.consecutive_failures,
      rateLimit: row.rate_limit,
      ordering: row.ordering,
      accountId: row.account_id,
    },
    isHead,
  };
}

/** The operational event a subscription disabled by its failures produces. */
const disabledEventType = 'subscription.disabled';

const deliveryStatus = { succeeded: 'succeeded', retry: 'pending', given_up: 'failed' } as const;

/**
 * The batch load: `$1` event ids and `$2` subscription ids (uuid[], one key per index), `$3` and
 * `$4` the batch's range of ids ({@link timeIdRange}); a row per delivery found. Exported for the
 * plan tests.
 */
export const loadSql = `SELECT d.id::text, d.status::text AS status, d.attempts_made, d.round,
             e.id::text AS event_id, e.type, e.data, e.occurred_at,
             s.id::text AS subscription_id, ${subscriptionColumnsSql}
      FROM unnest($1::uuid[], $2::uuid[]) AS k(event_id, subscription_id)
      -- Key by key, by primary key, within the batch's days: LIMIT keeps each lookup a lateral index
      -- probe (of one day of the log), which no estimate of a generic plan can turn into a scan.
      CROSS JOIN LATERAL (
        SELECT * FROM deliveries
        WHERE id = delivery_id(k.event_id, k.subscription_id) AND id BETWEEN $3::uuid AND $4::uuid LIMIT 1
      ) d
      CROSS JOIN LATERAL (
        SELECT * FROM events WHERE id = k.event_id AND id BETWEEN $3::uuid AND $4::uuid LIMIT 1
      ) e
      CROSS JOIN LATERAL (SELECT * FROM subscriptions WHERE id = d.subscription_id LIMIT 1) s`;

/** Creates the store. */
export function createDeliveryStore(pool: Pool, options: DeliveryStoreOptions): DeliveryStore {
  const { disableAfter, secretBox, batch = {} } = options;
  /** Whether each FIFO delivery (by id) has no earlier pending delivery of its subscription. */
  const fifoHeads = async (rows: Row[], high: string): Promise<Map<string, boolean>> => {
    const fifo = rows.filter((row) => row.ordering === 'fifo');
    if (fifo.length === 0) return new Map();
    const { rows: heads } = await pool.query<{ id: string; is_head: boolean }>({
      name: 'delivery-fifo-heads',
      text: `SELECT k.id::text, ${isFifoHeadSql('k', '$4::uuid')} AS is_head
             FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS k(id, event_id, subscription_id)`,
      values: [fifo.map((r) => r.id), fifo.map((r) => r.event_id), fifo.map((r) => r.subscription_id), high],
    });
    return new Map(heads.map((head) => [head.id, head.is_head]));
  };

  const load = batcher<{ eventId: string; subscriptionId: string }, LoadedDelivery | null>(async (keys) => {
    const [low, high] = timeIdRange(keys.map((k) => k.eventId));
    const { rows } = await pool.query<Row>({
      name: 'delivery-load',
      text: loadSql,
      values: [keys.map((k) => k.eventId), keys.map((k) => k.subscriptionId), low, high],
    });
    const heads = await fifoHeads(rows, high);
    const found = new Map(rows.map((row) => [`${row.event_id} ${row.subscription_id}`, row]));
    return keys.map((k) => {
      const row = found.get(`${k.eventId} ${k.subscriptionId}`);
      if (row === undefined) return null;
      try {
        return toLoaded(row, heads.get(row.id) ?? true, secretBox);
      } catch (error) {
        return error as Error;
      }
    });
  }, batch);

  const record = batcher<AttemptRecord, void>(async (records) => {
    const column = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
    const changes = failureRunChanges(
      records.map((r) => ({
        subscriptionId: r.delivery.subscription.id,
        effect: failureRunEffect(r.outcome, r.delivery.subscription.consecutiveFailures),
      })),
    );
    const { rows: notices } = await pool.query<{ event_id: string; subscription_id: string }>({
      name: 'delivery-record',
      text: `
      WITH input AS (
        SELECT * FROM unnest(
          $1::uuid[],
          $2::int[],
          $3::timestamptz[],
          $4::int[],
          $5::int[],
          $6::text[],
          $7::text[],
          $8::text[],
          $9::int[],
          $10::text[],
          $11::timestamptz[]
        ) AS t(delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, error_message,
               response_body, in_flight_limit, status, next_attempt_at)
      ), live AS (
        -- Deliveries deleted with their subscription during the attempt are left out (and the
        -- survivors locked against such a delete), so one deletion cannot fail the whole batch.
        SELECT i.* FROM input i CROSS JOIN LATERAL (
          SELECT 1 FROM deliveries d WHERE d.id = i.delivery_id AND d.id BETWEEN $19::uuid AND $20::uuid
          LIMIT 1 FOR KEY SHARE
        ) d
      ), attempts AS (
        INSERT INTO delivery_attempts
          (delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, error_message, response_body,
           in_flight_limit)
        SELECT delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, error_message, response_body,
               in_flight_limit
        FROM live
      ), deliveries_updated AS (
        UPDATE deliveries d
        SET status = i.status::"DeliveryStatus", attempts_made = d.attempts_made + 1, last_status_code = i.status_code,
            last_error = i.error_class, next_attempt_at = i.next_attempt_at, updated_at = now()
        FROM live i WHERE d.id = i.delivery_id AND d.id BETWEEN $19::uuid AND $20::uuid
      ), changes AS (
        SELECT * FROM unnest(
          $12::uuid[],
          $13::boolean[],
          $14::int[]
        ) AS c(subscription_id, reset, failures)
      ), prior AS (
        -- Locked, so this reads the latest committed status (and the runs below add to the latest
        -- count): which subscriptions this batch disables is then exact under concurrency. Locked
        -- in id order, so concurrent batches never deadlock.
        SELECT s.id, s.status FROM subscriptions s JOIN changes c ON c.subscription_id = s.id
        ORDER BY s.id FOR NO KEY UPDATE OF s
      ), runs AS (
        -- applyFailureRun, as an atomic increment.
        UPDATE subscriptions s
        SET consecutive_failures = (CASE WHEN c.reset THEN 0 ELSE s.consecutive_failures END) + c.failures,
            -- Only an active subscription is disabled: a pending one (its callback moved, and an
            -- attempt to the old one failed) stays pending until its new callback is verified.
            status = CASE
              WHEN s.status = 'active' AND c.failures > 0
                AND (CASE WHEN c.reset THEN 0 ELSE s.consecutive_failures END) + c.failures >= $15::int
              THEN 'disabled'::"SubscriptionStatus" ELSE s.status END,
            updated_at = now()
        FROM changes c JOIN prior p ON p.id = c.subscription_id
        WHERE s.id = c.subscription_id
        RETURNING s.id, s.account_id, s.callback_url, s.consecutive_failures, p.status AS was, s.status AS now
      ), disabled AS (
        SELECT * FROM runs WHERE was = 'active' AND now = 'disabled'
      ), notices AS (
        INSERT INTO events (id, account_id, type, data, occurred_at)
        SELECT uuid_generate_v7(), d.account_id, $16::text,
               jsonb_build_object(
                 'subscription_id', d.id, 'resource_uri', $17::text || d.id::text,
                 -- Without its query and fragment, which may hold the client's token: the notice
                 -- goes to the account's other callbacks.
                 'callback_url', substring(d.callback_url from '^[^?#]*'),
                 'reason', 'consecutive_failures', 'failure_count', d.consecutive_failures),
               now()
        FROM disabled d
        RETURNING id, account_id
      ), notice_deliveries AS (
        INSERT INTO deliveries (id, event_id, subscription_id, next_attempt_at, updated_at)
        SELECT delivery_id(n.id, s.id), n.id, s.id, now(), now()
        FROM notices n
        JOIN subscriptions s ON s.account_id = n.account_id AND s.status = 'active'
          AND ${receivesEventTypeSql('s', '$16::text', '$18::text')}
        WHERE s.id NOT IN (SELECT id FROM disabled)
        FOR KEY SHARE OF s
        RETURNING event_id, subscription_id
      )
      SELECT event_id::text, subscription_id::text FROM notice_deliveries`,
      values: [
        column((r) => r.delivery.id),
        column((r) => r.delivery.attemptsMade + 1),
        column((r) => r.result.startedAt.toISOString()),
        column((r) => r.result.durationMs),
        column((r) => r.result.statusCode),
        column((r) => r.result.errorClass),
        column((r) => r.result.errorMessage),
        column((r) => r.result.responseBody),
        column((r) => r.inFlightLimit),
        column((r) => deliveryStatus[r.outcome.kind]),
        column((r) => (r.outcome.kind === 'retry' ? r.outcome.nextAttemptAt.toISOString() : null)),
        changes.map((c) => c.subscriptionId),
        changes.map((c) => c.reset),
        changes.map((c) => c.failures),
        disableAfter,
        disabledEventType,
        options.links.subscription(''),
        operationalKind,
        ...timeIdRange(records.map((r) => r.delivery.id)),
      ],
    });
    if (notices.length > 0) {
      await options.enqueueNotices(
        notices.map((n) => ({ eventId: n.event_id, subscriptionId: n.subscription_id, round: 0 })),
      );
    }
    return records.map(() => undefined);
  }, batch);

  return {
    load,
    record,
    async expire({ eventId, subscriptionId, round }) {
      await pool.query(
        `UPDATE deliveries SET status = 'failed', last_error = 'expired', next_attempt_at = NULL, updated_at = now()
         WHERE id = delivery_id($1::uuid, $2::uuid) AND round = $3 AND status = 'pending'`,
        [eventId, subscriptionId, round],
      );
    },
    async cancel(deliveryId) {
      await pool.query(
        `UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
         WHERE id = $1::uuid AND status = 'pending'`,
        [deliveryId],
      );
    },
  };
}
