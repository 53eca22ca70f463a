/**
 * Reading, deleting and rotating the signing secret of one subscription of the caller's account,
 * each in one statement scoped to the account.
 */
import { validate as isUuid } from 'uuid';
import type { Prisma, PrismaClient, Subscription } from '@webhooks/db';
import { HttpProblem, notFound } from './problem.js';

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
  // findUnique, not findFirst: Prisma batches the findUnique calls of one tick into one statement,
  // which made reads under load about twice as fast.
  const row = isUuid(id) ? await prisma.subscription.findUnique({ where: { id, accountId } }) : null;
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

/** The new state of a rotated signing secret: the sealed current secret and when the previous one stops signing. */
export interface RotatedSecret {
  secret: string;
  previous_secret_expires_at: Date;
}

/**
 * Makes `sealedSecret` the current signing secret of subscription `id` of `accountId`; the secret
 * current at that moment keeps signing until `previousExpiresAt`. One UPDATE, so concurrent
 * rotations are serialised by the row lock and each moves the latest secret aside.
 *
 * @throws HttpProblem 404 as {@link findOwnSubscription}
 */
export async function rotateOwnSigningSecret(
  prisma: PrismaClient,
  accountId: string,
  id: string,
  sealedSecret: string,
  previousExpiresAt: Date,
): Promise<RotatedSecret> {
  const rows = isUuid(id)
    ? await prisma.$queryRaw<RotatedSecret[]>`
        UPDATE subscriptions
        SET previous_secret = secret, secret = ${sealedSecret},
            previous_secret_expires_at = ${previousExpiresAt}, updated_at = now()
        WHERE id = ${id}::uuid AND account_id = ${accountId}
        RETURNING secret, previous_secret_expires_at`
    : [];
  const row = rows[0];
  if (row === undefined) throw notFound(`Subscription ${id}`);
  return row;
}

/**
 * Applies `data` to `current` only if its status and callback URL are still those read, in one
 * statement; the row as updated. With `waitForFanOuts` (leaving FIFO ordering, whose follow-up must
 * see every delivery stored under the old row) the row is first locked `FOR UPDATE`, which waits
 * for the fan-outs' `FOR KEY SHARE` locks: a fan-out under way commits first, and a later one
 * reads the row again as updated (READ COMMITTED's re-check of a locked row,
 * https://www.postgresql.org/docs/current/transaction-iso.html#XACT-READ-COMMITTED).
 *
 * @throws HttpProblem 409 when another request changed either meanwhile (or deleted it): the
 *   client reads it again and decides again, since a status set on an old callback must not apply
 *   to a new one that has not answered its challenge
 */
export async function updateIfUnchanged(
  prisma: PrismaClient,
  current: Subscription,
  data: Prisma.SubscriptionUpdateInput,
  options: { waitForFanOuts?: boolean } = {},
): Promise<Subscription> {
  const update = (client: Prisma.TransactionClient) =>
    client.subscription.updateManyAndReturn({
      where: {
        id: current.id,
        accountId: current.accountId,
        status: current.status,
        callbackUrl: current.callbackUrl,
      },
      data,
    });
  const [row] =
    options.waitForFanOuts === true
      ? await prisma.$transaction(async (tx) => {
          await tx.$executeRaw`SELECT 1 FROM subscriptions WHERE id = ${current.id}::uuid FOR UPDATE`;
          return update(tx);
        })
      : await update(prisma);
  if (row === undefined) {
    throw new HttpProblem(
      409,
      'conflict',
      'The subscription changed while this update was applied; read it again and send the update again',
    );
  }
  return row;
}
