/**
 * The processor of the `events` queue: stores the event, finds the account's active subscriptions
 * that receive its type (general ones every type, kind ones their kind's; a test event only its
 * one subscription), creates one delivery per subscription and hands them to the account scheduler
 * (`scheduling/account-scheduler.ts`), which admits them into the `deliveries` queue in fair order
 * across accounts. Concurrent events are fanned out together, one SQL statement (sent with `pg`
 * directly, as the delivery path's) and one scheduler call per batch (see `batcher` in
 * @webhooks/shared). Every step is idempotent, and job ids are `<event id>.<subscription id>`, so a
 * fan-out run twice (a stalled job) never delivers twice. An event no active subscription receives
 * is not stored: retention would only delete it unread.
 *
 * A fan-out that PostgreSQL or Redis fails is deferred (`deferral.ts`), never failed: an accepted
 * event waits out an outage of any length.
 */
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import {
  kindOfType,
  parsePayloadTimestamp,
  batcher,
  type BatchOptions,
  type EventJobData,
} from '@webhooks/shared';
import { deferJob } from './deferral.js';
import type { AccountScheduler } from './scheduling/account-scheduler.js';

/** What the fan-out needs. */
export interface FanOutDeps {
  pool: Pool;
  scheduler: Pick<AccountScheduler, 'schedule'>;
  log: Logger;
  batch?: BatchOptions;
}

/** Creates the processor; it returns how many deliveries the event got. */
export function createFanOutProcessor(deps: FanOutDeps) {
  const fanOut = batcher<EventJobData, number>(
    async (events) => {
      const { rows: targets } = await deps.pool.query<{ event_id: string; subscription_id: string }>(
        `
      WITH input AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::text[], $7::uuid[])
          AS t(id, account_id, type, data, occurred_at, kind, only_subscription_id)
      ), targets AS (
        SELECT i.id AS event_id, s.id AS subscription_id
        FROM input i
        JOIN subscriptions s ON s.account_id = i.account_id AND s.status = 'active' AND (s.kind IS NULL OR s.kind = i.kind)
          AND (i.only_subscription_id IS NULL OR s.id = i.only_subscription_id)
        -- Locked so that a subscription deleted meanwhile cannot fail the deliveries' foreign key.
        FOR KEY SHARE OF s
      ), stored AS (
        INSERT INTO events (id, account_id, type, data, occurred_at)
        SELECT id, account_id, type, data, occurred_at FROM input
        WHERE id IN (SELECT event_id FROM targets)
        ON CONFLICT (id) DO NOTHING
      ), created AS (
        INSERT INTO deliveries (id, event_id, subscription_id, next_attempt_at, updated_at)
        SELECT uuid_generate_v7(), event_id, subscription_id, now(), now() FROM targets
        ON CONFLICT (event_id, subscription_id) DO NOTHING
      )
      SELECT event_id::text, subscription_id::text FROM targets`,
        [
          events.map((e) => e.id),
          events.map((e) => e.accountId),
          events.map((e) => e.type),
          events.map((e) => JSON.stringify(e.data)),
          events.map((e) => parsePayloadTimestamp(e.timestamp).toISOString()),
          events.map((e) => kindOfType(e.type) ?? null),
          events.map((e) => e.subscriptionId ?? null),
        ],
      );
      const byId = new Map(events.map((event) => [event.id, event]));
      await deps.scheduler.schedule(
        targets.map(({ event_id, subscription_id }) => {
          const { accountId, requestId } = byId.get(event_id)!;
          return { accountId, eventId: event_id, subscriptionId: subscription_id, requestId };
        }),
      );
      const counts = new Map<string, number>();
      for (const target of targets) counts.set(target.event_id, (counts.get(target.event_id) ?? 0) + 1);
      return events.map((event) => counts.get(event.id) ?? 0);
    },
    deps.batch ?? { maxBatchSize: 20 },
  );
  return async (job: Job<EventJobData>, token?: string): Promise<number> => {
    const { id: eventId, requestId, type } = job.data;
    try {
      const deliveries = await fanOut(job.data);
      deps.log.info({ eventId, requestId, type, deliveries }, 'event fanned out');
      return deliveries;
    } catch (error) {
      deps.log.warn({ err: error, eventId, requestId }, 'fan-out deferred: a dependency failed');
      return deferJob(job, token);
    }
  };
}
