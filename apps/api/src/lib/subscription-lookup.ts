/** Reading, deleting and rotating the secret of one subscription of the caller's account, each one statement. */
import { validate as isUuid } from 'uuid';
import type { Prisma, PrismaClient, Subscription } from '@webhooks/db';
import { HttpProblem, notFound } from './problem.js';

/**
 * The subscription `id` of `accountId`.
 * @throws HttpProblem 404 when the id is malformed, unknown, or another account's (alike, so none can be probed)
 */
export async function findOwnSubscription(
  prisma: PrismaClient,
  accountId: string,
  id: string,
): Promise<Subscription> {
  // findUnique: Prisma batches one tick's calls into one statement.
  const row = isUuid(id) ? await prisma.subscription.findUnique({ where: { id, accountId } }) : null;
  if (row === null) throw notFound(`Subscription ${id}`);
  return row;
}

/**
 * Deletes subscription `id` of `accountId`; its deliveries cascade, and its queued jobs are dropped.
 * Resolves with its `callback_url`, whose relay session (if any) the caller removes.
 * @throws HttpProblem 404 as {@link findOwnSubscription}
 */
export async function deleteOwnSubscription(
  prisma: PrismaClient,
  accountId: string,
  id: string,
): Promise<string> {
  const [row] = isUuid(id)
    ? await prisma.$queryRaw<Array<{ callback_url: string }>>`
        DELETE FROM subscriptions WHERE id = ${id}::uuid AND account_id = ${accountId} RETURNING callback_url`
    : [];
  if (row === undefined) throw notFound(`Subscription ${id}`);
  return row.callback_url;
}

/** The new state of a rotated signing secret: the sealed current secret and when the previous one stops signing. */
export interface RotatedSecret {
  secret: string;
  previous_secret_expires_at: Date;
}

/**
 * Makes `sealedSecret` the current secret; the one it replaces signs until `previousExpiresAt`.
 * One UPDATE: concurrent rotations are serialised by the row lock.
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
 * Applies `data` only if the status and callback URL are still those of `current`, in one statement;
 * the row as updated. With `waitForFanOuts` (leaving FIFO) the row is locked `FOR UPDATE` first,
 * which waits for fan-outs' `FOR KEY SHARE`, so a later fan-out reads the new row (PostgreSQL docs,
 * "Read Committed Isolation Level").
 * @throws HttpProblem 409 when another request changed either (or deleted it): a status set on an
 *   old callback must not apply to a new one that has not answered its challenge
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
