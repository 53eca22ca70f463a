/**
 * The auto-disable rule (docs/api.md#retries-and-limits): a delivery given up after an attempt
 * extends its subscription's run of failures (one that expired unsent, was cancelled or dropped
 * does not: the callback was never asked); a succeeded one ends the run; a run reaching
 * SUBSCRIPTION_DISABLE_AFTER disables an active subscription; re-enabling starts it again at 0.
 * The store applies {@link failureRunChanges} in SQL with atomic increments, as
 * {@link applyFailureRun} computes it, so concurrent batches never lose a failure.
 */
import type { DeliveryOutcome } from './outcome.js';

/** What one attempt's outcome does to its subscription's run of failures. */
export type FailureRunEffect = 'extend' | 'reset' | null;

/**
 * The effect of one attempt's outcome. A success when the run was 0 as the delivery was loaded
 * (`knownRun`) changes nothing, which spares the subscription's row a write per delivery; should a
 * concurrent failure have started a run meanwhile, the next success ends it.
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

/**
 * Folds the effects of a batch of attempts into one change per subscription (in first-seen
 * order). Within a batch, attempts finish in no known order, so a success ends the run before the
 * batch's failures count: the run is never longer than its true length.
 */
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

/**
 * The run after `change`, from the current `run`, and whether it disables the subscription.
 *
 * @param disableAfter SUBSCRIPTION_DISABLE_AFTER, failures in a row (≥ 1)
 */
export function applyFailureRun(
  run: number,
  change: Pick<FailureRunChange, 'reset' | 'failures'>,
  disableAfter: number,
): { run: number; disable: boolean } {
  const next = (change.reset ? 0 : run) + change.failures;
  return { run: next, disable: change.failures > 0 && next >= disableAfter };
}
