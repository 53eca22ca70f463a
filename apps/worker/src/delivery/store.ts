/**
 * The delivery path's reads and writes: one named SQL statement per batch of concurrent jobs (`batcher`),
 * so each connection prepares it once and a generic plan prunes the log's day partitions at run time.
 */
import type { Pool } from '@webhooks/db';
import {
  batcher,
  openClientCertificate,
  openCustomHeaders,
  openReceiverAuth,
  openAwsCredentials,
  timeIdRange,
  type SecretBox,
} from '@webhooks/shared';
import { createAttemptRecorder, type AttemptRecorderOptions } from './attempt-record.js';
import { isFifoHeadSql } from './fifo-head.js';
import type { AttemptRecord, DeliveryKey, LoadedDelivery } from './loaded-delivery.js';

export type { AttemptRecord, DeliveryKey, LoadedDelivery } from './loaded-delivery.js';

/** Reads and writes of the `deliveries` processor. */
export interface DeliveryStore {
  /** The delivery of `eventId` to `subscriptionId`, or null when it no longer exists (subscription deleted). */
  load(key: { eventId: string; subscriptionId: string }): Promise<LoadedDelivery | null>;
  /**
   * FIFO `subscriptionId`'s head (oldest pending, `exceptEventIds` left out), loaded as {@link load}
   * does, with the next pending one's event id; null when not FIFO or none pending.
   * @throws pg's errors, and the secret box's when no configured key opens a stored secret
   */
  loadHead(
    subscriptionId: string,
    exceptEventIds?: readonly string[],
  ): Promise<{ head: LoadedDelivery; nextEventId: string | null } | null>;
  /** The oldest `limit` pending deliveries of `subscriptionId`, as their jobs name them. @throws pg's errors */
  pendingRounds(subscriptionId: string, limit: number): Promise<DeliveryKey[]>;
  /**
   * Whether the delivery is still as read and its FIFO head: checked after the claim, so a head another
   * run attempted meanwhile is not sent again. @throws pg's errors
   */
  isUnchangedHead(key: {
    eventId: string;
    subscriptionId: string;
    round: number;
    attemptsMade: number;
  }): Promise<boolean>;
  /** Marks a pending delivery cancelled (subscription disabled, or its transformation cancelled it: `reason`). */
  cancel(deliveryId: string, reason?: string): Promise<void>;
  /** Gives up a delivery pending in `key.round` as `expired` (DELIVERY_MAX_AGE); the failure run is left alone. */
  expire(key: DeliveryKey): Promise<void>;
  /**
   * Records an attempt, the delivery's state and, when it ends, the subscription's failure run
   * (`attempt-record.ts`), before the job is acknowledged; a subscription this disables gets its
   * `subscription.disabled` event in the same statement. @throws pg's errors (the processor defers
   * the job, using no attempt)
   */
  record(record: AttemptRecord): Promise<void>;
}

export interface DeliveryStoreOptions extends AttemptRecorderOptions {
  /** Opens the stored signing secrets (SECRETS_ENCRYPTION_KEY). */
  secretBox: SecretBox;
}

/** What an attempt needs of a subscription, as the load and the fan-out's statement select it. */
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
  /** The custom headers, sealed (`custom-headers.ts` in @webhooks/shared), or null. */
  headers: string | null;
  /** The client certificate and key, sealed (`client-certificate.ts` in @webhooks/shared), or null. */
  client_tls: string | null;
  /** The receiver authentication, sealed (`receiver-auth.ts` in @webhooks/shared), or null. */
  auth: string | null;
  /** An AWS destination's customer-owned credentials, sealed (`aws-credentials.ts` in @webhooks/shared), or null. */
  destination_credentials: string | null;
  /** The transformation's source, or null. */
  transformation: string | null;
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
  headers: 's.headers',
  client_tls: 's.client_tls',
  auth: 's.auth',
  destination_credentials: 's.destination_credentials',
  transformation: 's.transformation',
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
 * A delivery the fan-out just created, as {@link DeliveryStore.load} would read it, for an inline attempt.
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

/** The row with its sealed values opened; one no configured key opens fails this delivery alone. */
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
      headers: openCustomHeaders(row.headers, row.subscription_id, secretBox),
      clientCertificate: openClientCertificate(row.client_tls, row.subscription_id, secretBox),
      auth: openReceiverAuth(row.auth, row.subscription_id, secretBox),
      awsCredentials: openAwsCredentials(row.destination_credentials, row.subscription_id, secretBox),
      transformation: row.transformation,
    },
    isHead,
  };
}

/** The batch load: `$1` event and `$2` subscription ids (uuid[]), `$3`–`$4` their id range; exported for plan tests. */
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
  const { secretBox, batch = {} } = options;
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

  const record = createAttemptRecorder(pool, options);

  return {
    load,
    record,
    async loadHead(subscriptionId, exceptEventIds = []) {
      const { rows } = await pool.query<Row & { next_event_id: string | null }>({
        name: 'delivery-load-fifo-head',
        text: `SELECT d.id::text, d.status::text AS status, d.attempts_made, d.round,
                      e.id::text AS event_id, e.type, e.data, e.occurred_at,
                      s.id::text AS subscription_id, ${subscriptionColumnsSql},
                      (SELECT n.event_id::text FROM deliveries n
                       WHERE n.subscription_id = s.id AND n.status = 'pending' AND n.event_id > d.event_id
                         AND n.event_id <> ALL($2::uuid[])
                       ORDER BY n.event_id LIMIT 1) AS next_event_id
               FROM subscriptions s
               CROSS JOIN LATERAL (
                 SELECT * FROM deliveries
                 WHERE subscription_id = s.id AND status = 'pending' AND event_id <> ALL($2::uuid[])
                 ORDER BY event_id LIMIT 1
               ) d
               CROSS JOIN LATERAL (SELECT * FROM events WHERE id = d.event_id LIMIT 1) e
               WHERE s.id = $1::uuid AND s.ordering = 'fifo'`,
        values: [subscriptionId, exceptEventIds],
      });
      const row = rows[0];
      return row === undefined
        ? null
        : { head: toLoaded(row, true, secretBox), nextEventId: row.next_event_id };
    },
    async pendingRounds(subscriptionId, limit) {
      const { rows } = await pool.query<{ event_id: string; round: number }>({
        name: 'delivery-pending-rounds',
        text: `SELECT event_id::text, round FROM deliveries
               WHERE subscription_id = $1::uuid AND status = 'pending' ORDER BY event_id LIMIT $2`,
        values: [subscriptionId, limit],
      });
      return rows.map((row) => ({ eventId: row.event_id, subscriptionId, round: row.round }));
    },
    async isUnchangedHead({ eventId, subscriptionId, round, attemptsMade }) {
      const [low, high] = timeIdRange([eventId]);
      const { rows } = await pool.query<{ is_head: boolean }>({
        name: 'delivery-is-unchanged-fifo-head',
        text: `SELECT d.status = 'pending' AND d.round = $5 AND d.attempts_made = $6
                      AND ${isFifoHeadSql('d', '$4::uuid')} AS is_head
               FROM deliveries d
               WHERE d.id = delivery_id($1::uuid, $2::uuid) AND d.id BETWEEN $3::uuid AND $4::uuid`,
        values: [eventId, subscriptionId, low, high, round, attemptsMade],
      });
      return rows[0]?.is_head === true;
    },
    async expire({ eventId, subscriptionId, round }) {
      await pool.query(
        `UPDATE deliveries SET status = 'failed', last_error = 'expired', next_attempt_at = NULL, updated_at = now()
         WHERE id = delivery_id($1::uuid, $2::uuid) AND round = $3 AND status = 'pending'`,
        [eventId, subscriptionId, round],
      );
    },
    async cancel(deliveryId, reason) {
      await pool.query(
        `UPDATE deliveries SET status = 'cancelled', last_error = $2, next_attempt_at = NULL, updated_at = now()
         WHERE id = $1::uuid AND status = 'pending'`,
        [deliveryId, reason ?? null],
      );
    },
  };
}
