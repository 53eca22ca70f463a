/**
 * The renewal rule of the worker's Redis leases (`SET NX PX` keys and sorted-set leases that end on
 * their own when their holder dies): the ordered hand-over's lease (`fifo.ts`), a round's claim
 * taken ahead of its step (`claim.ts`) and a host's slot kept from one ordered head for the next
 * (`host-gate.ts`).
 */

/**
 * Whether a lease of `leaseMs` taken or renewed at `renewedAt` is due for renewal at `now` (all
 * ms): once a third of it has passed, so that two slow attempts in a row still find it held.
 */
export function renewalDue(renewedAt: number, now: number, leaseMs: number): boolean {
  return now - renewedAt >= leaseMs / 3;
}
