/**
 * The auto-disable rule (docs/api.md#retries-and-limits): a delivery given up after an attempt
 * extends its subscription's failure run (expired, cancelled or dropped ones do not: never asked); a
 * success ends it; SUBSCRIPTION_DISABLE_AFTER in a row disables it. Applied in SQL with atomic increments.
 */
import type { DeliveryOutcome } from './outcome.js';

/** What one attempt's outcome does to its subscription's run of failures. */
export type FailureRunEffect = 'extend' | 'reset' | null;

/**
 * One outcome's effect: a success with the run 0 as loaded (`knownRun`) writes nothing; a concurrent
 * failure's run is ended by the next success.
 */
export function failureRunEffect(outcome: DeliveryOutcome, knownRun: number): FailureRunEffect {
  if (outcome.kind === 'given_up') return 'extend';
  if (outcome.kind === 'succeeded' && knownRun > 0) return 'reset';
  return null;
}

/** What a batch of attempts does to one subscription: end the run first (`reset`), then add `failures`. */
export interface FailureRunChange {
  subscriptionId: string;
  reset: boolean;
  failures: number;
}

/** Folds a batch into one change per subscription: a success ends the run before the batch's failures count. */
export function failureRunChanges(
  effects: ReadonlyArray<{ subscriptionId: string; effect: FailureRunEffect }>,
): FailureRunChange[] {
  const changes = new Map<string, FailureRunChange>();
  for (const { subscriptionId, effect } of effects) {
    if (effect === null) continue;
    const change = changes.get(subscriptionId) ?? { subscriptionId, reset: false, failures: 0 };
    if (effect === 'reset') change.reset = true;
    else change.failures += 1;
    changes.set(subscriptionId, change);
  }
  return [...changes.values()];
}

/** The run after `change` from `run`, and whether it disables (`disableAfter`: SUBSCRIPTION_DISABLE_AFTER, ≥ 1). */
export function applyFailureRun(
  run: number,
  change: Pick<FailureRunChange, 'reset' | 'failures'>,
  disableAfter: number,
): { run: number; disable: boolean } {
  const next = (change.reset ? 0 : run) + change.failures;
  return { run: next, disable: change.failures > 0 && next >= disableAfter };
}
