/**
 * Writing down an attempt and what it did to its delivery and subscription, in one transaction,
 * before the job is acknowledged (so a crash never loses a recorded outcome, at worst repeats an
 * attempt). A delivery given up adds to its subscription's run of failures; reaching
 * SUBSCRIPTION_DISABLE_AFTER disables the subscription. A success ends the run.
 */
import type { PrismaClient } from '@webhooks/db';
import type { AttemptResult } from './attempt.js';
import type { DeliveryOutcome } from './outcome.js';

/** What {@link recordAttempt} writes. */
export interface AttemptRecord {
  deliveryId: string;
  subscriptionId: string;
  /** 1 for the first attempt of the delivery, counted across retry rounds. */
  attemptNumber: number;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  /** The subscription's failure run as loaded; a success resets it only when it is not 0 already. */
  consecutiveFailures: number;
  /** SUBSCRIPTION_DISABLE_AFTER. */
  disableAfter: number;
}

const deliveryStatus = { succeeded: 'succeeded', retry: 'pending', given_up: 'failed' } as const;

/** Records one attempt; throws Prisma's errors (the job then fails and BullMQ retries it). */
export async function recordAttempt(prisma: PrismaClient, record: AttemptRecord): Promise<void> {
  const { result, outcome } = record;
  const writes = [
    prisma.deliveryAttempt.create({
      data: {
        deliveryId: record.deliveryId,
        attemptNumber: record.attemptNumber,
        startedAt: result.startedAt,
        durationMs: result.durationMs,
        statusCode: result.statusCode,
        errorClass: result.errorClass,
        errorMessage: result.errorMessage,
        responseBody: result.responseBody,
      },
    }),
    prisma.delivery.update({
      where: { id: record.deliveryId },
      data: {
        status: deliveryStatus[outcome.kind],
        attemptsMade: { increment: 1 },
        lastStatusCode: result.statusCode,
        lastError: result.errorClass,
        nextAttemptAt: outcome.kind === 'retry' ? outcome.nextAttemptAt : null,
      },
    }),
  ];
  if (outcome.kind === 'succeeded' && record.consecutiveFailures > 0) {
    writes.push(
      prisma.subscription.update({ where: { id: record.subscriptionId }, data: { consecutiveFailures: 0 } }) as never,
    );
  }
  if (outcome.kind === 'given_up') {
    writes.push(
      prisma.$executeRaw`
        UPDATE subscriptions
        SET consecutive_failures = consecutive_failures + 1,
            status = CASE WHEN consecutive_failures + 1 >= ${record.disableAfter}
                          THEN 'disabled'::"SubscriptionStatus" ELSE status END,
            updated_at = now()
        WHERE id = ${record.subscriptionId}::uuid` as never,
    );
  }
  await prisma.$transaction(writes);
}
