/**
 * The delivery path's reads and writes. Each is one SQL statement (through Prisma's raw queries)
 * over a batch of concurrent jobs (see `batcher` in @webhooks/shared for why); a single statement is atomic in
 * PostgreSQL, data-modifying CTEs included, so every write stays all-or-nothing.
 */
import type { PrismaClient } from '@webhooks/db';
import { batcher, type BatchOptions, type SecretBox } from '@webhooks/shared';
import type { AttemptResult } from './attempt.js';
import type { DeliveryOutcome } from './outcome.js';

/** A delivery with what its attempt needs of the event and the subscription. */
export interface LoadedDelivery {
  id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attemptsMade: number;
  event: { id: string; type: string; data: Record<string, unknown>; occurredAt: Date };
  subscription: {
    id: string;
    callbackUrl: string;
    webhookId: string | null;
    kind: string | null;
    status: 'active' | 'disabled';
    secret: string;
    previousSecret: string | null;
    previousSecretExpiresAt: Date | null;
    consecutiveFailures: number;
    /** Attempts a second at most (`rate_limit`), null for no limit. */
    rateLimit: number | null;
  };
}

/** What {@link DeliveryStore.record} writes for one attempt. */
export interface AttemptRecord {
  delivery: LoadedDelivery;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  /** The in-flight limit the attempt was sent under (shows throttling in the delivery log). */
  inFlightLimit: number;
}

/** Reads and writes of the `deliveries` processor. */
export interface DeliveryStore {
  /** The delivery of `eventId` to `subscriptionId`, or null when it no longer exists (subscription deleted). */
  load(key: { eventId: string; subscriptionId: string }): Promise<LoadedDelivery | null>;
  /** Marks a pending delivery cancelled (its subscription is disabled): nothing more is tried for it. */
  cancel(deliveryId: string): Promise<void>;
  /**
   * Records an attempt, the delivery's new state and, when the delivery ends, its subscription's
   * run of failures (a delivery given up extends it and at `disableAfter` disables the
   * subscription; a success ends it), before the job is acknowledged.
   *
   * @throws Prisma's errors; the job then fails and BullMQ runs it again
   */
  record(record: AttemptRecord): Promise<void>;
}

type Row = {
  id: string;
  status: LoadedDelivery['status'];
  attempts_made: number;
  event_id: string;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date;
  subscription_id: string;
  callback_url: string;
  webhook_id: string | null;
  kind: string | null;
  subscription_status: 'active' | 'disabled';
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  rate_limit: number | null;
};

/** The row with its secrets opened; a secret no configured key opens fails this delivery alone. */
function toLoaded(row: Row, secretBox: SecretBox): LoadedDelivery {
  return {
    id: row.id,
    status: row.status,
    attemptsMade: row.attempts_made,
    event: { id: row.event_id, type: row.type, data: row.data, occurredAt: row.occurred_at },
    subscription: {
      id: row.subscription_id,
      callbackUrl: row.callback_url,
      webhookId: row.webhook_id,
      kind: row.kind,
      status: row.subscription_status,
      secret: secretBox.open(row.secret),
      previousSecret: row.previous_secret === null ? null : secretBox.open(row.previous_secret),
      previousSecretExpiresAt: row.previous_secret_expires_at,
      consecutiveFailures: row.consecutive_failures,
      rateLimit: row.rate_limit,
    },
  };
}

const deliveryStatus = { succeeded: 'succeeded', retry: 'pending', given_up: 'failed' } as const;

/** What a finished delivery does to its subscription's run of failures. */
function subscriptionEffect({ delivery, outcome }: AttemptRecord): 'failure' | 'reset' | null {
  if (outcome.kind === 'given_up') return 'failure';
  if (outcome.kind === 'succeeded' && delivery.subscription.consecutiveFailures > 0) return 'reset';
  return null;
}

/**
 * Creates the store; `disableAfter` is SUBSCRIPTION_DISABLE_AFTER, `secretBox` opens the stored
 * signing secrets (SECRETS_ENCRYPTION_KEY).
 */
export function createDeliveryStore(
  prisma: PrismaClient,
  disableAfter: number,
  secretBox: SecretBox,
  batch: BatchOptions = {},
): DeliveryStore {
  const load = batcher<{ eventId: string; subscriptionId: string }, LoadedDelivery | null>(async (keys) => {
    const rows = await prisma.$queryRaw<Row[]>`
      SELECT d.id::text, d.status::text AS status, d.attempts_made,
             e.id::text AS event_id, e.type, e.data, e.occurred_at,
             s.id::text AS subscription_id, s.callback_url, s.webhook_id, s.kind, s.status::text AS subscription_status,
             s.secret, s.previous_secret, s.previous_secret_expires_at, s.consecutive_failures, s.rate_limit
      FROM unnest(${keys.map((k) => k.eventId)}::uuid[], ${keys.map((k) => k.subscriptionId)}::uuid[]) AS k(event_id, subscription_id)
      JOIN deliveries d ON d.event_id = k.event_id AND d.subscription_id = k.subscription_id
      JOIN events e ON e.id = d.event_id
      JOIN subscriptions s ON s.id = d.subscription_id`;
    const found = new Map(rows.map((row) => [`${row.event_id} ${row.subscription_id}`, row]));
    return keys.map((k) => {
      const row = found.get(`${k.eventId} ${k.subscriptionId}`);
      if (row === undefined) return null;
      try {
        return toLoaded(row, secretBox);
      } catch (error) {
        return error as Error;
      }
    });
  }, batch);

  const record = batcher<AttemptRecord, void>(async (records) => {
    const column = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
    await prisma.$executeRaw`
      WITH input AS (
        SELECT * FROM unnest(
          ${column((r) => r.delivery.id)}::uuid[],
          ${column((r) => r.delivery.attemptsMade + 1)}::int[],
          ${column((r) => r.result.startedAt.toISOString())}::timestamptz[],
          ${column((r) => r.result.durationMs)}::int[],
          ${column((r) => r.result.statusCode)}::int[],
          ${column((r) => r.result.errorClass)}::text[],
          ${column((r) => r.result.errorMessage)}::text[],
          ${column((r) => r.result.responseBody)}::text[],
          ${column((r) => r.inFlightLimit)}::int[],
          ${column((r) => deliveryStatus[r.outcome.kind])}::text[],
          ${column((r) => (r.outcome.kind === 'retry' ? r.outcome.nextAttemptAt.toISOString() : null))}::timestamptz[],
          ${column((r) => r.delivery.subscription.id)}::uuid[],
          ${column(subscriptionEffect)}::text[]
        ) AS t(delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, error_message,
               response_body, in_flight_limit, status, next_attempt_at, subscription_id, subscription_effect)
      ), live AS (
        -- Deliveries deleted with their subscription during the attempt are left out (and the
        -- survivors locked against such a delete), so one deletion cannot fail the whole batch.
        SELECT i.* FROM input i JOIN deliveries d ON d.id = i.delivery_id FOR KEY SHARE OF d
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
        FROM live i WHERE d.id = i.delivery_id
      ), effects AS (
        -- Per subscription: a success in the batch ends the run before the batch's failures count.
        SELECT subscription_id,
               count(*) FILTER (WHERE subscription_effect = 'failure') AS failures,
               count(*) FILTER (WHERE subscription_effect = 'reset') AS resets
        FROM live WHERE subscription_effect IS NOT NULL GROUP BY subscription_id
      ), runs AS (
        SELECT s.id, CASE WHEN e.resets > 0 THEN e.failures ELSE s.consecutive_failures + e.failures END AS run
        FROM subscriptions s JOIN effects e ON e.subscription_id = s.id
      )
      UPDATE subscriptions s
      SET consecutive_failures = r.run,
          status = CASE WHEN r.run >= ${disableAfter} THEN 'disabled'::"SubscriptionStatus" ELSE s.status END,
          updated_at = now()
      FROM runs r WHERE s.id = r.id`;
    return records.map(() => undefined);
  }, batch);

  return {
    load,
    record,
    async cancel(deliveryId) {
      await prisma.$executeRaw`
        UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
        WHERE id = ${deliveryId}::uuid AND status = 'pending'`;
    },
  };
}
