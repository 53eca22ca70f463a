/** Delivery rows that failed for good, written directly: what a recovery starts from. */
import { v7 as uuidv7 } from 'uuid';
import type { TestStack } from './stack.js';

/** `count` events of `account`, each with a delivery to `subscriptionId` that failed for good, written directly. */
export async function insertFailedDeliveries(
  stack: TestStack,
  account: string,
  subscriptionId: string,
  count: number,
) {
  const events = Array.from({ length: count }, () => ({
    id: uuidv7(),
    accountId: account,
    type: 'call.started',
    data: {},
    occurredAt: new Date(),
  }));
  await stack.api.app.prisma.event.createMany({ data: events });
  await stack.api.app.prisma.$executeRaw`
    INSERT INTO deliveries (id, event_id, subscription_id, status, attempts_made, updated_at)
    SELECT delivery_id(e, ${subscriptionId}::uuid), e, ${subscriptionId}::uuid, 'failed', 1, now()
    FROM unnest(${events.map((event) => event.id)}::uuid[]) AS e`;
}
