/**
 * The `events` queue's processor: stores the event, creates a delivery per active subscription that
 * receives its type and passes its filter, and hands them to the account scheduler; those admitted at
 * once are attempted here (`delivery/inline.ts`). Concurrent events fan out in one statement. Job ids
 * `<event>.<subscription>` make a rerun deliver nothing twice; a fault defers it (`deferral.ts`).
 */
import { context, type Context } from '@opentelemetry/api';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import {
  parsePayloadTimestamp,
  batcher,
  receivesEventTypeSql,
  type BatchOptions,
  type Catalogue,
  type EventJobData,
  type SecretBox,
} from '@webhooks/shared';
import { deferJob } from './deferral.js';
import type { FifoHeads } from './delivery/fifo.js';
import {
  createdDelivery,
  subscriptionColumnsNull,
  subscriptionColumnsOf,
  subscriptionColumnsSql,
  type LoadedDelivery,
} from './delivery/store.js';
import { createFilterCache, type FanOutTarget } from './filter-cache.js';
import type { AccountScheduler } from './scheduling/account-scheduler.js';
import type { FanOutDelivery } from './delivery/dispatch.js';

/** One event of a fan-out statement, for all its subscriptions or one. */
interface FanOutRow {
  event: EventJobData;
  onlySubscriptionId: string | null;
  /** Its subscriptions' content filters were checked already: deliver to the filtered ones too. */
  filterChecked: boolean;
}

/** What the fan-out needs. */
export interface FanOutDeps {
  pool: Pool;
  /** The event catalogue: each event type's kind. */
  catalogue: Catalogue;
  /** Ordered delivery: a FIFO subscription's deliveries wait for their turn here, not in the scheduler. */
  fifoHeads: FifoHeads;
  scheduler: Pick<AccountScheduler<FanOutDelivery>, 'schedule'>;
  /** Opens the signing secrets of the deliveries created here, for their inline first attempts. */
  secretBox: SecretBox;
  log: Logger;
  batch?: BatchOptions;
}

/** The event as an attempt reads it (`LoadedDelivery.event`), `data` as PostgreSQL stored it. */
function loadedEvent(event: EventJobData, data: Record<string, unknown>): LoadedDelivery['event'] {
  return { id: event.id, type: event.type, data, occurredAt: parsePayloadTimestamp(event.timestamp) };
}

/** Creates the processor; it returns how many deliveries the event got. */
export function createFanOutProcessor(deps: FanOutDeps) {
  const { catalogue } = deps;
  const filters = createFilterCache();
  /**
   * One statement: stores the events and their deliveries for every active subscription receiving
   * their type, but returns those with an unchecked content filter, to be checked here.
   */
  const createDeliveries = async (rows: FanOutRow[]) => {
    const { rows: found } = await deps.pool.query<FanOutTarget>({
      name: 'fan-out-create-deliveries',
      text: `
      WITH input AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::text[], $7::uuid[], $8::boolean[])
          AS t(id, account_id, type, data, occurred_at, kind, only_subscription_id, filter_checked)
      ), candidates AS (
        SELECT i.id AS event_id, s.id AS subscription_id, s.filter, ${subscriptionColumnsSql}, i.filter_checked
        FROM input i
        JOIN subscriptions s ON s.account_id = i.account_id AND s.status = 'active'
          AND ${receivesEventTypeSql('s', 'i.type', 'i.kind')}
          AND (i.only_subscription_id IS NULL OR s.id = i.only_subscription_id)
        -- Locked so that a subscription deleted meanwhile cannot fail the deliveries' foreign key.
        FOR KEY SHARE OF s
      ), targets AS (
        SELECT *, delivery_id(event_id, subscription_id) AS delivery_id
        FROM candidates WHERE filter IS NULL OR filter_checked
      ), stored AS (
        INSERT INTO events (id, account_id, type, data, occurred_at)
        SELECT DISTINCT ON (id) id, account_id, type, data, occurred_at FROM input
        WHERE id IN (SELECT event_id FROM targets)
        ON CONFLICT (id) DO NOTHING
      ), created AS (
        INSERT INTO deliveries (id, event_id, subscription_id, next_attempt_at, updated_at)
        SELECT delivery_id, event_id, subscription_id, now(), now() FROM targets
        ON CONFLICT (id) DO NOTHING
        RETURNING id
      ), flagged AS (
        -- Each target and the row its insert returned, if any, sorted together by delivery id. A
        -- join of the two CTEs, whose sizes the planner cannot know, ran as a nested loop that
        -- compared every target with every created row: 0.2-1.1 s a statement at 100 subscriptions.
        SELECT *, bool_or(returned) OVER (PARTITION BY delivery_id) AS created FROM (
          SELECT event_id, subscription_id, ${subscriptionColumnsOf('targets')}, delivery_id, false AS returned
          FROM targets
          UNION ALL
          SELECT NULL, NULL, ${subscriptionColumnsNull}, id, true FROM created
        ) u
      )
      SELECT f.event_id::text, f.subscription_id::text, NULL::jsonb AS filter, ${subscriptionColumnsOf('f')},
        CASE WHEN f.created THEN f.delivery_id::text END AS delivery_id, f.created,
        -- The event's data as PostgreSQL stores it (jsonb orders its keys), as a load would read it,
        -- so that an inline attempt sends the body its retries will: once per event, on a created row.
        CASE WHEN f.created
          AND row_number() OVER (PARTITION BY f.event_id ORDER BY NOT f.created) = 1
          THEN (SELECT i.data FROM input i WHERE i.id = f.event_id LIMIT 1) END AS event_data
      FROM flagged f WHERE NOT f.returned
      UNION ALL
      SELECT c.event_id::text, c.subscription_id::text, c.filter, ${subscriptionColumnsOf('c')},
        NULL::text AS delivery_id, false AS created, NULL::jsonb AS event_data
      FROM candidates c WHERE c.filter IS NOT NULL AND NOT c.filter_checked`,
      values: [
        rows.map((r) => r.event.id),
        rows.map((r) => r.event.accountId),
        rows.map((r) => r.event.type),
        rows.map((r) => JSON.stringify(r.event.data)),
        rows.map((r) => parsePayloadTimestamp(r.event.timestamp).toISOString()),
        rows.map((r) => catalogue.entry(r.event.type)?.kind ?? null),
        rows.map((r) => r.onlySubscriptionId),
        rows.map((r) => r.filterChecked),
      ],
    });
    return found;
  };

  const fanOut = batcher<{ event: EventJobData; traceContext: Context }, number>(
    async (batch) => {
      const events = batch.map(({ event }) => event);
      const traceContexts = new Map(batch.map(({ event, traceContext }) => [event.id, traceContext]));
      // A test event goes to its one subscription whatever its filter says: the developer asked.
      const first = await createDeliveries(
        events.map((event) => ({
          event,
          onlySubscriptionId: event.subscriptionId ?? null,
          filterChecked: event.subscriptionId !== undefined,
        })),
      );
      const byId = new Map(events.map((event) => [event.id, event]));
      const stored = new Map<string, LoadedDelivery['event']>();
      const targets = first.filter((t) => t.filter === null);
      const matched = first.filter(
        (t) => t.filter !== null && filters.matches(t, byId.get(t.event_id)!, deps.log),
      );
      if (matched.length > 0) {
        const second = await createDeliveries(
          matched.map((t) => ({
            event: byId.get(t.event_id)!,
            onlySubscriptionId: t.subscription_id,
            filterChecked: true,
          })),
        );
        targets.push(...second);
      }
      for (const target of targets)
        if (target.event_data !== null)
          stored.set(target.event_id, loadedEvent(byId.get(target.event_id)!, target.event_data));
      await deps.scheduler.schedule(
        targets
          .filter((target) => target.ordering !== 'fifo')
          .map((target): FanOutDelivery => {
            const event = byId.get(target.event_id)!;
            const { delivery_id: deliveryId } = target;
            const storedEvent = stored.get(target.event_id);
            return {
              accountId: event.accountId,
              eventId: target.event_id,
              subscriptionId: target.subscription_id,
              requestId: event.requestId,
              created: target.created,
              traceContext: traceContexts.get(target.event_id)!,
              ...(deliveryId === null || storedEvent === undefined
                ? {}
                : { loaded: () => createdDelivery(deliveryId, storedEvent, target, deps.secretBox) }),
            };
          }),
      );
      await deps.fifoHeads.ensure(
        targets.filter((target) => target.ordering === 'fifo').map((target) => target.subscription_id),
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
      // Each event keeps its own job's trace context: the batch runs in its first event's.
      const deliveries = await fanOut({ event: job.data, traceContext: context.active() });
      deps.log.info({ eventId, requestId, type, deliveries }, 'event fanned out');
      return deliveries;
    } catch (error) {
      deps.log.warn({ err: error, eventId, requestId }, 'fan-out deferred: a dependency failed');
      return deferJob(job, token);
    }
  };
}
