/**
 * A step's first two questions to Redis, asked in the same event-loop turn: its round's claim
 * (`claim.ts`) and an in-flight slot of its subscription's gate (`gate.ts`). Both go out in one
 * write on the gates' auto-pipelined connection, and the step waits for one round trip instead of
 * two, one after the other (bench/HISTORY.md, "The claim and the slot asked together, and where a
 * delivery's CPU goes at 100 events a second": 0.55 → 0.41 ms a step on an idle Redis).
 *
 * Asking for the slot before the claim is known costs nothing to the rule the claim keeps (one run
 * of a round attempts at a time): nothing is read or sent before both answered. What either answer
 * makes useless is given back at once: a slot taken by a run whose round another run holds, or a
 * claim taken while the gate could not be asked (Redis failed it). A refusal of the gate with the
 * claim taken is the step's to handle (it waits), as before.
 */
import { performance } from 'node:perf_hooks';
import type { AttemptClaims } from './claim.js';
import type { Admission, DeliveryGate } from './gate.js';
import type { RoundRef } from './step.js';

/**
 * What the step holds after asking. `claimed` false: another run holds the round's claim, and
 * nothing is held. `admission`: the gate's answer, or null when it was not asked.
 */
export type ClaimAndSlot = { claimed: false } | { claimed: true; admission: Admission | null };

/** What {@link claimAndAdmit} asks. */
export interface ClaimAndAdmitDeps {
  claims: Pick<AttemptClaims, 'take' | 'drop'>;
  gate: Pick<DeliveryGate, 'acquire' | 'release'>;
}

/**
 * Takes `ref`'s round claim (unless its caller holds it: `RoundRef.claimedAhead`) and, when
 * `askGate`, a slot of its subscription's gate, both asked at once.
 *
 * @returns {@link ClaimAndSlot}; a claim held by the caller counts as taken
 * @throws ioredis' errors when Redis failed either question; whatever the other took is given back
 *   first (the caller's own claim included, as a step that throws drops it)
 */
export async function claimAndAdmit(
  deps: ClaimAndAdmitDeps,
  ref: Pick<RoundRef, 'jobId' | 'subscriptionId' | 'claimedAhead' | 'firstAsk'>,
  askGate: boolean,
): Promise<ClaimAndSlot> {
  const { jobId, subscriptionId } = ref;
  const askedAt = performance.now();
  const [claim, slot] = await Promise.allSettled([
    ref.claimedAhead === true ? Promise.resolve(true) : deps.claims.take(jobId),
    askGate ? deps.gate.acquire(subscriptionId, jobId, ref.firstAsk === true) : Promise.resolve(null),
  ]);
  const held = claim.status === 'fulfilled' && claim.value;
  if (held && slot.status === 'fulfilled') return { claimed: true, admission: slot.value };
  if (slot.status === 'fulfilled' && slot.value?.admitted === true)
    await deps.gate.release(subscriptionId, jobId, slot.value, null, performance.now() - askedAt);
  if (held) await deps.claims.drop(jobId);
  if (claim.status === 'rejected') throw claim.reason;
  if (slot.status === 'rejected') throw slot.reason;
  return { claimed: false };
}
