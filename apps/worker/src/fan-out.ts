/**
 * The processor of the `events` queue: stores the event, finds the account's active subscriptions
 * that receive its type (general ones every type, kind ones their kind's), creates one delivery
 * per subscription and enqueues one delivery job each. Every step is idempotent, and job ids are
 * `<event id>.<subscription id>`, so a fan-out run twice (a stalled job) never delivers twice.
 */
import type { Job, Queue } from 'bullmq';
import { v7 as uuidv7 } from 'uuid';
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

/** What the fan-out needs. */
export interface FanOutDeps {
  prisma: PrismaClient;
  deliveries: Queue<DeliveryJobData>;
  policy: DeliveryPolicy;
}

/** Creates the processor; it returns how many deliveries the event got. */
export function createFanOutProcessor(deps: FanOutDeps) {
  return async (job: Job<EventJobData>): Promise<number> => {
    const event = job.data;
    const kind = kindOfType(event.type) ?? null;
    const subscriptions = await deps.prisma.subscription.findMany({
      where: { accountId: event.accountId, status: 'active', OR: [{ kind: null }, { kind }] },
      select: { id: true },
    });
    const now = new Date();
    await deps.prisma.$transaction([
      deps.prisma.event.createMany({
        data: [
          {
            id: event.id,
            accountId: event.accountId,
            type: event.type,
            data: event.data as object,
            occurredAt: parsePayloadTimestamp(event.timestamp),
          },
        ],
        skipDuplicates: true,
      }),
      deps.prisma.delivery.createMany({
        data: subscriptions.map((subscription) => ({
          id: uuidv7(),
          eventId: event.id,
          subscriptionId: subscription.id,
          nextAttemptAt: now,
        })),
        skipDuplicates: true,
      }),
    ]);
    if (subscriptions.length > 0) {
      await deps.deliveries.addBulk(
        subscriptions.map((subscription) => ({
          name: 'delivery',
          data: { eventId: event.id, subscriptionId: subscription.id },
          opts: deliveryJobOptions(deps.policy, deliveryJobId(event.id, subscription.id)),
        })),
      );
    }
    return subscriptions.length;
  };
}
