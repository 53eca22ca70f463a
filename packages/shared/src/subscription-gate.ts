/** Where a subscription's delivery gate lives in Redis, and how the API reads its throttling (`throttle.ts`). */
import { batcher } from '@webhooks/publisher';
import type { QueueShards } from '@webhooks/publisher';
import type { RedisConnection } from '@webhooks/publisher';
import { inFlightLimit, throttleState, type InFlightBounds, type ThrottleState } from './throttle.js';
import { breakerState, type BreakerState } from './breaker.js';

/**
 * Redis keys of one subscription's gate, in one hash slot for the gate's scripts:
 * - `leases`: sorted set of job ids holding a slot, scored by lease expiry (ms);
 * - `parked`: sorted set of job ids waiting for a slot, scored by when they started waiting;
 * - `state`: hash of `allowance` (below the base only), the average slot time, and the breaker's state.
 */
export function subscriptionGateKeys(prefix: string, subscriptionId: string) {
  const base = `${prefix}:gate:{${subscriptionId}}`;
  return {
    leases: `${base}:leases`,
    parked: `${base}:parked`,
    state: `${base}:state`,
  };
}

/** A subscription's circuit breaker as the API shows it; times are ISO 8601, null while closed. */
export interface BreakerView {
  state: BreakerState;
  opened_at: string | null;
  retry_at: string | null;
}

/** A subscription's throttling as the API shows it (`delivery` on the subscription resource). */
export interface DeliveryThrottle {
  in_flight_limit: number;
  state: ThrottleState;
  breaker: BreakerView;
}

const closedBreaker: BreakerView = { state: 'closed', opened_at: null, retry_at: null };

/** The breaker of a gate's `open_until` and `opened_at` fields (ms, as stored) at `nowMs`. */
function breakerView(openUntil: string | null, openedAt: string | null, nowMs: number): BreakerView {
  if (openUntil === null) return closedBreaker;
  const retryAt = Number(openUntil);
  return {
    state: breakerState(retryAt, nowMs),
    opened_at: openedAt === null ? null : new Date(Number(openedAt)).toISOString(),
    retry_at: new Date(retryAt).toISOString(),
  };
}

/**
 * Reads the throttling of `subscriptionIds`, one round trip per queue shard.
 * @param bounds SUBSCRIPTION_MAX_IN_FLIGHT (no stored state: at it) and SUBSCRIPTION_IN_FLIGHT_CEILING
 * @throws ioredis' errors when Redis cannot be reached
 */
export async function readDeliveryThrottles(
  redis: RedisConnection,
  shards: Pick<QueueShards, 'subscriptionPrefix'>,
  subscriptionIds: readonly string[],
  bounds: InFlightBounds,
): Promise<Map<string, DeliveryThrottle>> {
  const byPrefix = new Map<string, string[]>();
  for (const id of subscriptionIds) {
    const prefix = shards.subscriptionPrefix(id);
    const ids = byPrefix.get(prefix) ?? [];
    ids.push(id);
    byPrefix.set(prefix, ids);
  }
  const throttles = new Map<string, DeliveryThrottle>();
  // One pipeline per shard: a Cluster runs a pipeline only when its keys share a node.
  for (const [prefix, ids] of byPrefix) {
    const pipeline = redis.pipeline();
    for (const id of ids)
      pipeline.hmget(subscriptionGateKeys(prefix, id).state, 'allowance', 'open_until', 'opened_at');
    const replies = (await pipeline.exec()) ?? [];
    const now = Date.now();
    ids.forEach((id, i) => {
      const [error, value] = replies[i] ?? [null, null];
      if (error) throw error;
      const [allowance, openUntil, openedAt] = (value as Array<string | null> | null) ?? [null, null, null];
      throttles.set(id, {
        ...throttleOf(allowance == null ? bounds.base : Number(allowance), bounds),
        breaker: breakerView(openUntil ?? null, openedAt ?? null, now),
      });
    });
  }
  return throttles;
}

/** The pacing of a subscription whose gate allows `allowance` attempts in flight. */
function throttleOf(allowance: number, bounds: InFlightBounds): Omit<DeliveryThrottle, 'breaker'> {
  return {
    in_flight_limit: inFlightLimit(allowance, bounds.ceiling),
    state: throttleState(allowance, bounds.base),
  };
}

/** The pacing every subscription starts with (no gate state yet): the base limit, healthy. */
export function startingThrottle(bounds: InFlightBounds): DeliveryThrottle {
  return { ...throttleOf(bounds.base, bounds), breaker: closedBreaker };
}

/**
 * {@link readDeliveryThrottles} batched over one event-loop turn, so a burst of API reads is one pipeline.
 * @returns a function from subscription ids to their throttling, rejecting with ioredis' errors
 */
export function createDeliveryThrottleReader(
  redis: RedisConnection,
  shards: Pick<QueueShards, 'subscriptionPrefix'>,
  bounds: InFlightBounds,
): (subscriptionIds: readonly string[]) => Promise<Map<string, DeliveryThrottle>> {
  const readOne = batcher<string, DeliveryThrottle>(async (ids) => {
    const throttles = await readDeliveryThrottles(redis, shards, ids, bounds);
    return ids.map((id) => throttles.get(id)!);
  });
  return async (ids) => new Map(await Promise.all(ids.map(async (id) => [id, await readOne(id)] as const)));
}
