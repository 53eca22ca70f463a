/**
 * The admission every attempt passes, one script on Redis' clock (`gate-scripts.ts`): a slot of its
 * subscription (`throttle.ts`'s in-flight limit; only the probe while the breaker is open), the round's
 * claim, its account's turn when asked, the host's share and `rate_limit` when known. Over the limit it
 * waits in place or parks in BullMQ's delayed set, using no attempt; a release wakes the oldest parked.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  averageDurationMs,
  inFlightLimit,
  minParkMs,
  nextAllowance,
  nextThreshold,
  slowStartThreshold,
  parkDelayMs,
  turnMs,
  subscriptionGateKeys,
  entersThrottling,
  isSlowing,
  type CongestionSignal,
  type InFlightBounds,
  type ParkingView,
  type RedisConnection,
} from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';
import type { SubscriptionBreaker } from './breaker.js';
import { claimedWaitMs, claimKey } from './claim.js';
import { defineGateScripts } from './gate-scripts.js';
import { hostCapKeys, hostMember, hostWaitMs, askedMemoryMs, type HostAsk } from './host-gate.js';
import type { SchedulerKeys } from '../scheduling/admission-script.js';
import { heldParkMs, turnArgs, turnKeys } from '../scheduling/turn-script.js';
import { waitsInSlot, type InSlotWaitRule } from './in-slot-wait.js';

/** Share of releases (state) and admissions (leases) that refresh a TTL: each would cost a command per delivery. */
const stateRefreshShare = 1 / 16;

/** What the gate answered a job. */
export type Admission =
  /** Send now under `allowance` (decimal string, `inFlightLimit` its integer part), `averageMs`, `threshold`. */
  | {
      admitted: true;
      allowance: string;
      inFlightLimit: number;
      averageMs: number | null;
      threshold: number;
      /** The half-open breaker's probe (`breaker.ts`): its outcome closes or reopens it. */
      probe: boolean;
      /** The token of the round's claim this admission took, which its release drops. */
      claim: string;
      /** The hostname whose share this admission took, still held; null when none was asked. */
      host: string | null;
    }
  /**
   * Wait `waitMs` and ask again: parked over the limit or by the breaker, `claimed` by another run,
   * `inTurnList` (held for its account's turn, woken when granted), or `byHost` (cap, share, `rate_limit`).
   */
  | { admitted: false; waitMs: number; byBreaker?: true; claimed?: true; inTurnList?: true; byHost?: true };

export interface DeliveryGateOptions {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** QUEUE_PREFIX. */
  prefix: string;
  /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING. */
  bounds: InFlightBounds;
  /** The shard's account scheduler: its keys and accounts' default quota, for the turns of jobs it did not admit. */
  scheduler: { keys: SchedulerKeys; deliveriesPerSecond: number };
  /** How long a slot is held at most, in ms: longer than the longest attempt (DELIVERY_TIMEOUT_MS). */
  leaseMs: number;
  /** A host's slots in this shard (`hostCapPerShard`). */
  hostCap: number;
  /** Longest wait of a parked delivery before it asks again, in ms. */
  maxParkMs: number;
  /** When a delivery over the limit waits in place instead of being parked. */
  inSlotWait: InSlotWaitRule;
  /** Moves a parked (delayed) job back to the queue now, when a slot frees; never throws. */
  wake(jobId: string): Promise<void>;
  log: Logger;
  /** Counted: a job parked, a subscription whose in-flight limit drops below the maximum. */
  metrics: Pick<WorkerMetrics, 'parked' | 'throttled'>;
  /** The subscription's circuit breaker, which each release's counts feed. */
  breaker: SubscriptionBreaker;
}

/** The gate's operations; `jobId` is the BullMQ job id of the delivery. */
export interface DeliveryGate {
  /**
   * Takes a slot and the round's claim, waiting in place while {@link waitsInSlot} allows, or says how
   * long to wait; with `turn` the account's turn too, with `host` the host share and `rate_limit` too.
   * @throws ioredis' errors when Redis cannot be reached
   */
  acquire(
    subscriptionId: string,
    jobId: string,
    turn?: { accountId: string; requestId?: string | undefined },
    host?: HostAsk,
  ): Promise<Admission>;
  /**
   * Gives the slot and claim back; after an `attempt` (null: none), applies its signal to the
   * allowance, `heldMs` to the average and, when `sent`, its outcome to the breaker; with `host`,
   * its slot too. Never throws: a slot Redis did not get back ends with its lease.
   */
  release(
    subscriptionId: string,
    jobId: string,
    admission: Extract<Admission, { admitted: true }>,
    attempt: { signal: CongestionSignal; sent: boolean } | null,
    heldMs: number,
    host?: { hostname: string; accountId: string } | null,
  ): Promise<void>;
}

/** Most subscriptions this process remembers as full (a bound on memory; the hints are short-lived). */
const maxFullHints = 10_000;

/** Creates the gate on `options.redis` (registering its scripts there). */
export function createDeliveryGate(options: DeliveryGateOptions): DeliveryGate {
  const { redis, prefix, bounds, leaseMs, maxParkMs, wake, log, metrics, scheduler } = options;
  let waitingInSlot = 0;
  /** How long a parked entry is remembered, in ms: past the longest park, so a live one is kept. */
  const parkedMemoryMs = maxParkMs * 2;
  const scripts = defineGateScripts(redis);
  /** The scheduler's keys every admission passes, and the turn's arguments of one that asks none. */
  const schedulerKeys = turnKeys(scheduler.keys);
  const noTurn = turnArgs(scheduler.keys, scheduler.deliveriesPerSecond, { accountId: '' });
  /** Subscriptions just found full, refused for a few ms without a round trip (never admitted). */
  const fullHints = new Map<string, ParkingView & { until: number }>();

  const park = (view: ParkingView): Admission => ({
    admitted: false,
    waitMs: parkDelayMs(view, maxParkMs, Math.random()),
  });

  /** One question to the gate; `useHint`: a subscription just found full is refused without one. */
  const ask = async (
    subscriptionId: string,
    jobId: string,
    useHint: boolean,
    turn: { accountId: string; requestId?: string | undefined } | undefined,
    host: HostAsk | undefined,
  ): Promise<Admission> => {
    const hint = fullHints.get(subscriptionId);
    if (useHint && hint !== undefined && hint.until > Date.now()) {
      hint.parked += 1;
      return park(hint);
    }
    const gateKeys = subscriptionGateKeys(prefix, subscriptionId);
    const hostKeys = host === undefined ? null : hostCapKeys(prefix, host.hostname, subscriptionId);
    const keys = {
      ...gateKeys,
      claim: claimKey(prefix, jobId),
      ...schedulerKeys,
      // Unused without a host, but named in the same slot.
      hostLeases: hostKeys?.leases ?? gateKeys.leases,
      hostAsking: hostKeys?.asking ?? gateKeys.leases,
      hostWaiting: hostKeys?.waiting ?? gateKeys.leases,
      sent: hostKeys?.rate ?? gateKeys.leases,
    };
    const claim = randomUUID();
    const [admitted, allowance, ahead, average, oldestHeldMs, threshold, breaker] = await scripts.acquire(
      keys,
      {
        slot: '1',
        hostMember: host === undefined ? '' : hostMember(host.accountId, jobId),
        hostAccount: host?.accountId ?? '',
        hostCap: options.hostCap,
        askedMemoryMs,
        rate: host?.rate ?? '',
        claimToken: claim,
        job: jobId,
        leaseMs,
        base: bounds.base,
        parkedMemoryMs,
        ceiling: bounds.ceiling,
        refreshTtl: Math.random() < stateRefreshShare ? '1' : '0',
        turn: turn === undefined ? '0' : '1',
        ...(turn === undefined ? noTurn : turnArgs(scheduler.keys, scheduler.deliveriesPerSecond, turn)),
      },
    );
    const averageMs = average === '' ? null : Number(average);
    const limit = inFlightLimit(Number(allowance), bounds.ceiling);
    if (admitted === 1) {
      const slowStartUntil = threshold === '' ? bounds.ceiling : Number(threshold);
      const probe = breaker === 'probe';
      return {
        admitted: true,
        allowance,
        inFlightLimit: limit,
        averageMs,
        threshold: slowStartUntil,
        probe,
        claim,
        host: host?.hostname ?? null,
      };
    }
    if (admitted === 2) return { admitted: false, waitMs: claimedWaitMs, claimed: true };
    if (admitted === 3) return { admitted: false, waitMs: heldParkMs, inTurnList: true };
    if (admitted === 4)
      return {
        admitted: false,
        waitMs: oldestHeldMs === -1 ? hostWaitMs(Math.random()) : oldestHeldMs,
        byHost: true,
      };
    // Held by the breaker until its cool-down or probe ends, plus up to 1 s so the held do not ask at once.
    if (breaker !== '')
      return { admitted: false, waitMs: oldestHeldMs + Math.round(Math.random() * 1_000), byBreaker: true };
    if (fullHints.size >= maxFullHints) fullHints.clear();
    const view: ParkingView = { parked: ahead, limit, averageMs, oldestHeldMs, leaseMs };
    const untilSlotFrees = Math.min(50, Math.max(minParkMs, (turnMs(view) ?? minParkMs) / limit));
    const fresh = { ...view, until: Date.now() + untilSlotFrees };
    fullHints.set(subscriptionId, fresh);
    return park(fresh);
  };

  return {
    async acquire(subscriptionId, jobId, turn, host) {
      let admission = await ask(subscriptionId, jobId, true, turn, host);
      let waitedMs = 0;
      while (
        !admission.admitted &&
        admission.byBreaker !== true &&
        admission.claimed !== true &&
        admission.inTurnList !== true &&
        admission.byHost !== true &&
        waitsInSlot(admission.waitMs, waitedMs, waitingInSlot, options.inSlotWait)
      ) {
        waitingInSlot += 1;
        try {
          await setTimeout(admission.waitMs);
        } finally {
          waitingInSlot -= 1;
        }
        waitedMs += admission.waitMs;
        // Refused, it may have been parked by that answer.
        admission = await ask(subscriptionId, jobId, false, turn, host);
      }
      if (
        !admission.admitted &&
        admission.claimed !== true &&
        admission.inTurnList !== true &&
        admission.byHost !== true
      )
        metrics.parked.inc();
      return admission;
    },

    async release(subscriptionId, jobId, admission, attempt, heldMs, host) {
      fullHints.delete(subscriptionId);
      const gateKeys = subscriptionGateKeys(prefix, subscriptionId);
      const hostKeys = host == null ? null : hostCapKeys(prefix, host.hostname);
      const keys = {
        ...gateKeys,
        claim: claimKey(prefix, jobId),
        hostLeases: hostKeys?.leases ?? gateKeys.leases,
        hostWaiting: hostKeys?.waiting ?? gateKeys.leases,
      };
      const allowance = Number(admission.allowance);
      // This attempt's slot time counts: the first window has no average before it.
      const average = averageDurationMs(admission.averageMs, heldMs);
      const slowing = isSlowing(heldMs, admission.averageMs);
      const next =
        attempt === null
          ? allowance
          : nextAllowance(
              allowance,
              attempt.signal,
              bounds,
              slowing,
              slowStartThreshold(admission.threshold, average),
            );
      const threshold =
        attempt === null
          ? admission.threshold
          : nextThreshold(allowance, next, admission.threshold, bounds, attempt.signal, slowing);
      if (entersThrottling(allowance, next, bounds.base)) metrics.throttled.inc();
      const outcome = attempt === null || !attempt.sent ? '' : attempt.signal === 'increase' ? '1' : '0';
      try {
        const [woken, failuresInRow, windowAttempts, windowFailures, opens, probe, hostWoken] =
          await scripts.release(keys, {
            slot: '1',
            hostMember: host == null ? '' : hostMember(host.accountId, jobId),
            job: jobId,
            claimToken: admission.claim,
            base: bounds.base,
            expected: admission.allowance,
            next: next === allowance ? '' : String(next),
            average: Math.round(average),
            ceiling: bounds.ceiling,
            threshold: threshold === admission.threshold ? '' : threshold,
            refreshTtl: Math.random() < stateRefreshShare ? '1' : '0',
            parkedMemoryMs,
            outcome,
            nowMs: Date.now(),
            windowMs: options.breaker.windowMs,
          });
        // Not awaited: the slot is free already, the promotion a shortcut (a closing breaker's too).
        for (const jobId of woken) void wake(jobId);
        if (hostWoken !== '') void wake(hostWoken.slice(hostWoken.indexOf('\t') + 1));
        if (outcome !== '') {
          const counts = { failuresInRow, windowAttempts, windowFailures, opens };
          const first = await options.breaker.ended(subscriptionId, counts, outcome === '1', probe === 1);
          if (first !== null) void wake(first);
        }
      } catch (error) {
        log.warn({ err: error, subscriptionId }, 'delivery gate release failed; the slot lease will expire');
      }
    },
  };
}
