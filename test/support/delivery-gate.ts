/**
 * A worker's per-subscription gate for tests that ask it directly, on a test file's own prefix:
 * silent logs, fresh metrics, no wait in place (a refused delivery is parked at once), the shard's
 * account scheduler under the same prefix, and a circuit breaker out of reach unless the test gives
 * its own options.
 */
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { BreakerOptions } from '@webhooks/shared';
import { createSubscriptionBreaker, type BreakerChange } from '../../apps/worker/src/delivery/breaker.js';
import { createDeliveryGate, type DeliveryGate } from '../../apps/worker/src/delivery/gate.js';
import { createWorkerMetrics } from '../../apps/worker/src/metrics.js';
import { accountSchedulerKeys } from '../../apps/worker/src/scheduling/admission-script.js';

/** Breaker settings no test of slots and turns reaches. */
const unreachableBreaker: BreakerOptions = {
  failuresInRow: 1000,
  failureRate: 1,
  minAttempts: 1000,
  windowMs: 60_000,
  cooldownMs: 1_000,
  maxCooldownMs: 1_000,
};

/**
 * Creates the gate. `bounds` are the in-flight bounds, `leaseMs` a slot's lease (ms),
 * `deliveriesPerSecond` the accounts' default quota for their turns; `wake` records what a release
 * wakes; `breaker` and `onChange` the breaker's settings and announcements.
 */
export function testGate(
  redis: Redis,
  prefix: string,
  options: {
    bounds: { base: number; ceiling: number };
    leaseMs: number;
    /** A host's slots (HOST_MAX_IN_FLIGHT); 200 unless given. */
    hostCap?: number;
    deliveriesPerSecond?: number;
    wake?: (jobId: string) => Promise<void>;
    breaker?: BreakerOptions;
    onChange?: (subscriptionId: string, change: BreakerChange) => Promise<void>;
  },
): DeliveryGate {
  const log = pino({ level: 'silent' });
  const metrics = createWorkerMetrics();
  return createDeliveryGate({
    redis,
    prefix,
    bounds: options.bounds,
    scheduler: {
      keys: accountSchedulerKeys(prefix),
      deliveriesPerSecond: options.deliveriesPerSecond ?? 1_000,
    },
    leaseMs: options.leaseMs,
    hostCap: options.hostCap ?? 200,
    maxParkMs: 60_000,
    inSlotWait: { maxMs: 0, maxWaiting: 0 },
    wake: options.wake ?? (async () => {}),
    log,
    metrics,
    breaker: createSubscriptionBreaker({
      redis,
      prefix,
      breaker: options.breaker ?? unreachableBreaker,
      onChange: options.onChange ?? (async () => {}),
      log,
      metrics,
    }),
  });
}
