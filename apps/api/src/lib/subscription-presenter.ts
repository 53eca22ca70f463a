/**
 * Subscriptions as shown, with their pacing read from Redis within {@link throttleReadTimeoutMs}: no
 * answer makes a read a 503, never a hang; a row just written shows the starting pacing rather than a 503.
 */
import type { Subscription as SubscriptionRow } from '@webhooks/db';
import {
  createDeliveryThrottleReader,
  startingThrottle,
  withRedisTimeout,
  type InFlightBounds,
  type QueueShards,
  type RedisConnection,
} from '@webhooks/shared';
import { isInfrastructureError } from './infrastructure-error.js';
import type { Views } from './views.js';

/** How long a read waits for the subscriptions' pacing in Redis, in ms. */
export const throttleReadTimeoutMs = 1_000;

/** The presenters over `redis` (the API's producer connection). */
export function createSubscriptionPresenter(
  redis: RedisConnection,
  shards: Pick<QueueShards, 'subscriptionPrefix'>,
  bounds: InFlightBounds,
  views: Views,
) {
  const readThrottles = createDeliveryThrottleReader(redis, shards, bounds);
  /** @throws PublishUnavailableError when Redis does not answer in time */
  const present = async (rows: SubscriptionRow[]) => {
    const throttles = await withRedisTimeout(
      readThrottles(rows.map((row) => row.id)),
      throttleReadTimeoutMs,
      'the pacing of the subscriptions',
    );
    return rows.map((row) => views.subscription(row, throttles.get(row.id)!));
  };
  const presentOne = async (row: SubscriptionRow) => (await present([row]))[0]!;
  const presentWritten = (row: SubscriptionRow) =>
    presentOne(row).catch((error: unknown) => {
      if (!isInfrastructureError(error)) throw error;
      return views.subscription(row, startingThrottle(bounds));
    });
  return { present, presentOne, presentWritten };
}
