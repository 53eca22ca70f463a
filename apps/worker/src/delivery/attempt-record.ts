/**
 * The statement recording attempts: each attempt, its delivery's state and, when it ends, the
 * subscription's failure run ({@link failureRunChanges}), one statement per batch. A subscription it
 * disables gets a `subscription.disabled` event in the same statement (the reconciler republishes a lost fan-out).
 */
import pRetry from 'p-retry';
import type { Pool } from '@webhooks/db';
import {
  batcher,
  formatPayloadTimestamp,
  subscriptionDisabledType,
  type BatchOptions,
  type EventJobData,
  type ResourceLinks,
  timeIdRange,
} from '@webhooks/shared';
import { failureRunChanges, failureRunEffect } from './auto-disable.js';
import type { AttemptRecord } from './loaded-delivery.js';

const deliveryStatus = { succeeded: 'succeeded', retry: 'pending', given_up: 'failed' } as const;

/** A `subscription.disabled` event as the record statement stores it (a row of `events`). */
export interface StoredNotice {
  id: string;
  account_id: string;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/** A stored notice as its fan-out job carries it. */
export function noticeEvent(row: StoredNotice): EventJobData {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    data: row.data,
    timestamp: formatPayloadTimestamp(row.occurred_at),
  };
}

/**
 * The record of a batch of attempts ({@link createAttemptRecorder}); exported for the plan tests. Per
 * attempt: `$1` delivery ids, `$2` attempt numbers, `$3` start times, `$4` durations (ms), `$5` status
 * codes, `$6` error classes, `$7` messages, `$8` response bodies, `$9` in-flight limits, `$10` new
 * status, `$11` next attempt's time; per subscription whose failure run changes: `$12` ids, `$13` run
 * ends, `$14` failures to add; `$15` SUBSCRIPTION_DISABLE_AFTER, `$16` notice type, `$17` notice
 * resource URI prefix, `$18`–`$19` the batch's id range (`timeIdRange`). Returns the stored notices.
 */
export const recordSql = `
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
    -- The update locks each delivery it changes, and skips one deleted with its subscription
    -- during the attempt (PostgreSQL's READ COMMITTED re-check, "Transaction Isolation" in its
    -- manual): only the deliveries it returns get their attempt, so a deletion cannot fail the
    -- batch nor leave an attempt behind. The deliveries are found by their ids (= ANY, one
    -- index probe each), not by the range alone: from a cached plan, the join read every
    -- delivery in the range (whole milliseconds of event ids), a fan-out's hundred for ten.
    UPDATE deliveries d
    SET status = i.status::"DeliveryStatus", attempts_made = d.attempts_made + 1, last_status_code = i.status_code,
        last_error = i.error_class, next_attempt_at = i.next_attempt_at, updated_at = now()
    FROM input i
    WHERE d.id = i.delivery_id AND d.id = ANY($1::uuid[]) AND d.id BETWEEN $18::uuid AND $19::uuid
    RETURNING d.id
  ), attempts AS (
    INSERT INTO delivery_attempts
      (delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, error_message, response_body,
       in_flight_limit)
    SELECT i.delivery_id, i.attempt_number, i.started_at, i.duration_ms, i.status_code, i.error_class,
           i.error_message, i.response_body, i.in_flight_limit
    FROM input i JOIN live l ON l.id = i.delivery_id
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
    RETURNING id, account_id, type, data, occurred_at
  )
  SELECT id::text, account_id, type, data, occurred_at FROM notices`;

export interface AttemptRecorderOptions {
  /** SUBSCRIPTION_DISABLE_AFTER. */
  disableAfter: number;
  /** Addresses under PUBLIC_BASE_URL, for the `resource_uri` of `subscription.disabled` events. */
  links: ResourceLinks;
  /** Publishes stored `subscription.disabled` events' fan-out jobs; must not throw (the reconciler retries). */
  enqueueNotices(events: EventJobData[]): Promise<void>;
  batch?: BatchOptions;
}

/**
 * SQLSTATEs after which PostgreSQL rolled the transaction back whole, asking for a retry ("Serialization
 * Failure Handling"): retried here, since deferring would send the attempt again.
 */
const transientStates = new Set(['40P01', '40001']);

/** Tries of a record the database rolled back for a transient cause, the first included. */
const recordTries = 4;

/**
 * Creates the recorder: a function recording one attempt, resolved once its batch committed.
 * @throws (the function) pg's errors, a deadlock or serialization failure after {@link recordTries}
 *   tries; the processor then defers the job without using an attempt
 */
export function createAttemptRecorder(
  pool: Pool,
  options: AttemptRecorderOptions,
): (record: AttemptRecord) => Promise<void> {
  const { disableAfter, batch = {} } = options;
  return batcher<AttemptRecord, void>(async (records) => {
    const column = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
    const changes = failureRunChanges(
      records.map((r) => ({
        subscriptionId: r.delivery.subscription.id,
        effect: failureRunEffect(r.outcome, r.delivery.subscription.consecutiveFailures),
      })),
    );
    const query = () =>
      pool.query<StoredNotice>({
        name: 'delivery-record',
        text: recordSql,
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
          subscriptionDisabledType,
          options.links.subscription(''),
          ...timeIdRange(records.map((r) => r.delivery.id)),
        ],
      });
    const { rows: notices } = await pRetry(query, {
      retries: recordTries - 1,
      minTimeout: 10,
      randomize: true,
      shouldRetry: (error) => transientStates.has((error as { code?: string }).code ?? ''),
    });
    if (notices.length > 0) {
      await options.enqueueNotices(notices.map(noticeEvent));
    }
    return records.map(() => undefined);
  }, batch);
}
