/** Reading and deleting one subscription of the caller's account. */
import { validate as isUuid } from 'uuid';
import type { PrismaClient, Subscription } from '@webhooks/db';
import { notFound } from './problem.js';

/**
 * The subscription `id` of `accountId`.
 *
 * @throws HttpProblem 404 when the id is malformed, unknown, or another account's: the three look
 *   alike, so ids of other accounts cannot be probed.
 */
export async function findOwnSubscription(
  prisma: PrismaClient,
  accountId: string,
  id: string,
): Promise<Subscription> {
  const row = isUuid(id) ? await prisma.subscription.findFirst({ where: { id, accountId } }) : null;
  if (row === null) throw notFound(`Subscription ${id}`);
  return row;
}

/**
 * Deletes the subscription `id` of `accountId` in one statement; its deliveries and attempts go
 * with it (ON DELETE CASCADE), and its queued delivery jobs find no delivery and are dropped.
 *
 * @throws HttpProblem 404 as {@link findOwnSubscription}
 */
export async function deleteOwnSubscription(
  prisma: PrismaClient,
  accountId: string,
  id: string,
): Promise<void> {
  const { count } = isUuid(id)
    ? await prisma.subscription.deleteMany({ where: { id, accountId } })
    : { count: 0 };
  if (count === 0) throw notFound(`Subscription ${id}`);
}
