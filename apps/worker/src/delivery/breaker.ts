/**
 * A subscription's circuit breaker in its gate's state hash: the release counts each attempt, this module
 * applies {@link breakerTransition}, and the admission holds deliveries while open and lets one probe
 * through after the cool-down. Changes are announced through `onChange`.
 */
import type { Logger } from 'pino';
import {
  breakerTransition,
  defineScript,
  subscriptionGateKeys,
  type BreakerCounts,
  type BreakerOptions,
  type BreakerReason,
  type RedisConnection,
} from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';

/** What a breaker's change announces. Times are Redis' clock. */
export type BreakerChange =
  | {
      kind: 'opened';
      reason: BreakerReason;
      /** Failed attempts in a row, and the window's attempts and failures, when it opened. */
      failuresInRow: number;
      windowAttempts: number;
      windowFailures: number;
      /** When its probe may go. */
      retryAt: Date;
    }
  | { kind: 'closed'; failingSince: Date };

/**
 * `A.action` 'open' or 'close', applied only while the times opened are still `A.opens` (CAS, so one
 * of the attempts ending together decides); opening holds `A.cooldownMs`. Returns {1 applied | 0,
 * first opened (ms), probe time (ms) or the parked job to wake once closed}. Closing restarts slow start at 1.
 */
const breakerLua = `
local s = redis.call('HMGET', K.state, 'opens', 'opened_at')
if (s[1] or '0') ~= A.opens then return {0, '', ''} end
local since = s[2] or tostring(now)
if A.action == 'close' then
  redis.call('HDEL', K.state, 'opens', 'open_until', 'opened_at', 'probe', 'probe_until', 'fails', 'win_at', 'win_n', 'win_fail')
  redis.call('HSET', K.state, 'allowance', '1')
  local head = redis.call('ZPOPMIN', K.parked)
  return {1, since, head[1] or ''}
end
local openUntil = now + tonumber(A.cooldownMs)
redis.call('HSET', K.state, 'opens', tonumber(A.opens) + 1, 'open_until', openUntil, 'opened_at', since,
  'fails', 0, 'win_at', now, 'win_n', 0, 'win_fail', 0)
redis.call('HDEL', K.state, 'probe', 'probe_until')
redis.call('PEXPIRE', K.state, 86400000)
return {1, since, tostring(openUntil)}`;

/** `webhook_subscription_breaker_transitions_total`'s label of each transition. */
const transitionLabel = { open: 'opened', reopen: 'reopened', close: 'closed' } as const;

export interface SubscriptionBreakerOptions {
  /** The gate's connection. */
  redis: RedisConnection;
  /** QUEUE_PREFIX of the shard (the gate's). */
  prefix: string;
  breaker: BreakerOptions;
  /** Announces an opened or closed breaker; never throws. */
  onChange(subscriptionId: string, change: BreakerChange): Promise<void>;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'breakerTransitions'>;
}

/** The breaker's step after an attempt's slot went back. */
export interface SubscriptionBreaker {
  /** BREAKER_WINDOW_MS: the window the gate's release counts attempts in, in ms. */
  readonly windowMs: number;
  /**
   * Applies an attempt's outcome (`counts` include it; `confirmed`: a 200 or a broker's ack; `probe`:
   * the half-open probe). Never throws: a change Redis did not take is decided by the next attempt.
   * @returns the first parked job when the breaker just closed, for the gate to wake; else null
   */
  ended(
    subscriptionId: string,
    counts: BreakerCounts,
    confirmed: boolean,
    probe: boolean,
  ): Promise<string | null>;
}

/** Creates the breaker on `options.redis` (registering its script there). */
export function createSubscriptionBreaker(options: SubscriptionBreakerOptions): SubscriptionBreaker {
  const { redis, prefix, log, metrics } = options;
  const script = defineScript<[number, string, string]>()(redis, {
    name: 'webhookBreaker',
    keys: ['state', 'parked'],
    args: ['action', 'opens', 'cooldownMs'],
    clock: true,
    lua: breakerLua,
  });
  return {
    windowMs: options.breaker.windowMs,
    async ended(subscriptionId, counts, confirmed, probe) {
      const transition = breakerTransition(counts, confirmed, probe, options.breaker);
      if (transition === null) return null;
      const keys = subscriptionGateKeys(prefix, subscriptionId);
      try {
        const [applied, since, then] = await script(keys, {
          action: transition.kind === 'close' ? 'close' : 'open',
          opens: counts.opens,
          cooldownMs: transition.kind === 'close' ? 0 : transition.cooldownMs,
        });
        if (applied !== 1) return null;
        metrics.breakerTransitions.inc({ transition: transitionLabel[transition.kind] });
        if (transition.kind === 'close') {
          await options.onChange(subscriptionId, { kind: 'closed', failingSince: new Date(Number(since)) });
          return then === '' ? null : then;
        }
        log.warn(
          { subscriptionId, transition: transition.kind, retryAt: Number(then) },
          'circuit breaker open',
        );
        if (transition.kind === 'open') {
          await options.onChange(subscriptionId, {
            kind: 'opened',
            reason: transition.reason,
            failuresInRow: counts.failuresInRow,
            windowAttempts: counts.windowAttempts,
            windowFailures: counts.windowFailures,
            retryAt: new Date(Number(then)),
          });
        }
      } catch (error) {
        log.warn(
          { err: error, subscriptionId },
          'circuit breaker not updated; the next attempt decides again',
        );
      }
      return null;
    },
  };
}
