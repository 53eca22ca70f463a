/**
 * The processor of the `events` queue: stores the event, finds the account's active subscriptions
 * that receive its type (general ones every type, kind ones their kind's), creates one delivery
 * per subscription and enqueues one delivery job each. Concurrent events are fanned out together,
 * one SQL statement and one `addBulk` per batch (see batching.ts). Every step is idempotent, and
 * job ids are `<event id>.<subscription id>`, so a fan-out run twice (a stalled job) never
 * delivers twice.
 */
import type { Job, Queue } from 'bullmq';
import type { PrismaClient } from '@webhooks/db';
import {
  deliveryJobId,
  deliveryJobOptions,
  kindOfType,
  parsePayloadTimestamp,
  type DeliveryJobData,
  type DeliveryPolicy,
  type EventJobData,
} from '@webhooks/shared';
import { batcher, type BatchOptions } from './batching.js';

/** What the fan-out needs. */
export interface FanOutDeps {
  prisma: PrismaClient;
  deliveries: Queue<DeliveryJobData>;
  policy: DeliveryPolicy;
  batch?: BatchOptions;
}

/** Creates the processor; it returns how many deliveries the event got. */
export function createFanOutProcessor(deps: FanOutDeps) {
  const fanOut = batcher<EventJobData, number>(async (events) => {
    const targets = await deps.prisma.$queryRaw<Array<{ event_id: string; subscription_id: string }>>`
      WITH input AS (
        SELECT * FROM unnest(
          ${events.map((e) => e.id)}::uuid[],
          ${events.map((e) => e.accountId)}::text[],
          ${events.map((e) => e.type)}::text[],
          ${events.map((e) => JSON.stringify(e.data))}::jsonb[],
          ${events.map((e) => parsePayloadTimestamp(e.timestamp).toISOString())}::timestamptz[],
          ${events.map((e) => kindOfType(e.type) ?? null)}::text[]
        ) AS t(id, account_id, type, data, occurred_at, kind)
      ), stored AS (
        INSERT INTO events (id, account_id, type, data, occurred_at)
        SELECT id, account_id, type, data, occurred_at FROM input
        ON CONFLICT (id) DO NOTHING
      ), targets AS (
        SELECT i.id AS event_id, s.id AS subscription_id
        FROM input i
        JOIN subscriptions s ON s.account_id = i.account_id AND s.status = 'active' AND (s.kind IS NULL OR s.kind = i.kind)
      ), created AS (
        INSERT INTO deliveries (id, event_id, subscription_id, next_attempt_at, updated_at)
        SELECT uuid_generate_v7(), event_id, subscription_id, now(), now() FROM targets
        ON CONFLICT (event_id, subscription_id) DO NOTHING
      )
      SELECT event_id::text, subscription_id::text FROM targets`;
    if (targets.length > 0) {
      await deps.deliveries.addBulk(
        targets.map(({ event_id, subscription_id }) => ({
          name: 'delivery',
          data: { eventId: event_id, subscriptionId: subscription_id },
          opts: deliveryJobOptions(deps.policy, deliveryJobId(event_id, subscription_id)),
        })),
      );
    }
    return events.map((event) => targets.filter((target) => target.event_id === event.id).length);
  }, deps.batch);
  return (job: Job<EventJobData>): Promise<number> => fanOut(job.data);
}
