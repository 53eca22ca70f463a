/**
 * A subscription's circuit breaker (martinfowler.com/bliki/CircuitBreaker.html; Convoy keeps one per
 * endpoint): pure rules the gate applies and the API shows. It opens after a run of failures or a
 * failure rate that means down; open, deliveries wait unspent. After the cool-down one probe goes:
 * confirmed closes it, failed reopens it for twice as long.
 */
import Type from 'typebox';
import { ConfigError } from './config.js';

/** The worker's environment variables of the breaker (docs/configuration.md). */
export const breakerEnv = {
  BREAKER_FAILURES_IN_ROW: Type.Integer({
    default: 20,
    minimum: 1,
    description:
      'Failed attempts in a row to one subscription that open its circuit breaker: its deliveries then wait, using no attempts, until a probe attempt succeeds',
  }),
  BREAKER_FAILURE_RATE: Type.Number({
    default: 0.9,
    exclusiveMinimum: 0,
    maximum: 1,
    description:
      "Share of a subscription's attempts failed within BREAKER_WINDOW_MS (at least BREAKER_MIN_ATTEMPTS of them) that opens its circuit breaker",
  }),
  BREAKER_MIN_ATTEMPTS: Type.Integer({
    default: 20,
    minimum: 1,
    description:
      'Fewest attempts within BREAKER_WINDOW_MS before their failure rate can open the circuit breaker',
  }),
  BREAKER_WINDOW_MS: Type.Integer({
    default: 60_000,
    minimum: 1_000,
    description:
      "Window over which a subscription's failure rate is counted, in ms (one window after another)",
  }),
  BREAKER_COOLDOWN_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    description:
      'How long an opened circuit breaker holds deliveries before one probe attempt, in ms; doubled each time the probe fails',
  }),
  BREAKER_MAX_COOLDOWN_MS: Type.Integer({
    default: 900_000,
    minimum: 100,
    description:
      'Longest wait between two probe attempts of an open circuit breaker, in ms (at least BREAKER_COOLDOWN_MS)',
  }),
};

/**
 * {@link BreakerOptions} of validated {@link breakerEnv}.
 * @throws ConfigError when BREAKER_MAX_COOLDOWN_MS is below BREAKER_COOLDOWN_MS
 */
export function breakerOptionsFromEnv(config: {
  BREAKER_FAILURES_IN_ROW: number;
  BREAKER_FAILURE_RATE: number;
  BREAKER_MIN_ATTEMPTS: number;
  BREAKER_WINDOW_MS: number;
  BREAKER_COOLDOWN_MS: number;
  BREAKER_MAX_COOLDOWN_MS: number;
}): BreakerOptions {
  if (config.BREAKER_MAX_COOLDOWN_MS < config.BREAKER_COOLDOWN_MS)
    throw new ConfigError(
      `Invalid environment variable BREAKER_MAX_COOLDOWN_MS=${config.BREAKER_MAX_COOLDOWN_MS}: it must be at least BREAKER_COOLDOWN_MS (${config.BREAKER_COOLDOWN_MS})`,
    );
  return {
    failuresInRow: config.BREAKER_FAILURES_IN_ROW,
    failureRate: config.BREAKER_FAILURE_RATE,
    minAttempts: config.BREAKER_MIN_ATTEMPTS,
    windowMs: config.BREAKER_WINDOW_MS,
    cooldownMs: config.BREAKER_COOLDOWN_MS,
    maxCooldownMs: config.BREAKER_MAX_COOLDOWN_MS,
  };
}

/** When the breaker opens and how long it stays open (BREAKER_* in docs/configuration.md). */
export interface BreakerOptions {
  /** Failed attempts in a row that open it (≥ 1). */
  failuresInRow: number;
  /** Share of failed attempts in a window, in (0, 1], that opens it. */
  failureRate: number;
  /** Fewest attempts in a window before its failure rate counts. */
  minAttempts: number;
  /** The window the failure rate is counted over, in ms (a tumbling window). */
  windowMs: number;
  /** How long it stays open the first time, in ms; doubled each time it opens again. */
  cooldownMs: number;
  /** Longest cool-down, in ms. */
  maxCooldownMs: number;
}

/** What the gate counted of a subscription's attempts, after the one just ended. */
export interface BreakerCounts {
  /** Failed attempts in a row (0 after a confirmed one). */
  failuresInRow: number;
  /** Attempts in the current window, and the failed ones among them. */
  windowAttempts: number;
  windowFailures: number;
  /** Times the breaker opened since it last closed: 0 while closed. */
  opens: number;
}

/** Why a breaker opened, as `subscription.failing` says. */
export type BreakerReason = 'consecutive_failures' | 'failure_rate';

/** What one ended attempt does to the breaker. */
export type BreakerTransition =
  /** Closed → open for `cooldownMs`. */
  | { kind: 'open'; reason: BreakerReason; cooldownMs: number }
  /** The half-open probe failed: open again, for `cooldownMs`. */
  | { kind: 'reopen'; cooldownMs: number }
  /** A confirmed attempt while open or half-open: closed. */
  | { kind: 'close' };

/** The cool-down after the breaker opened the `opens`-th time in a row (≥ 1), in ms. */
export function breakerCooldownMs(
  opens: number,
  options: Pick<BreakerOptions, 'cooldownMs' | 'maxCooldownMs'>,
): number {
  return Math.min(options.maxCooldownMs, options.cooldownMs * 2 ** Math.min(30, Math.max(0, opens - 1)));
}

/**
 * What an ended attempt (`counts` include it) does to the breaker; `confirmed`: it succeeded,
 * `probe`: it was the half-open probe. @returns the transition, or null when nothing changes
 */
export function breakerTransition(
  counts: BreakerCounts,
  confirmed: boolean,
  probe: boolean,
  options: BreakerOptions,
): BreakerTransition | null {
  if (counts.opens > 0) {
    if (confirmed) return { kind: 'close' };
    return probe ? { kind: 'reopen', cooldownMs: breakerCooldownMs(counts.opens + 1, options) } : null;
  }
  if (confirmed) return null;
  const cooldownMs = breakerCooldownMs(1, options);
  if (counts.failuresInRow >= options.failuresInRow)
    return { kind: 'open', reason: 'consecutive_failures', cooldownMs };
  const rateCounts = counts.windowAttempts >= options.minAttempts;
  if (rateCounts && counts.windowFailures >= options.failureRate * counts.windowAttempts)
    return { kind: 'open', reason: 'failure_rate', cooldownMs };
  return null;
}

/** A breaker's state as the API shows it. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/** The state at `nowMs` of a breaker open until `openUntilMs` (ms; null closed): half-open after it. */
export function breakerState(openUntilMs: number | null, nowMs: number): BreakerState {
  if (openUntilMs === null) return 'closed';
  return nowMs < openUntilMs ? 'open' : 'half_open';
}
