/**
 * How many first deliveries the account scheduler's background admission may take for a worker
 * that attempts what it admits (`delivery/inline.ts`), and when an admission is worth its script
 * call. Pure rules, so that they are tested alone.
 */

/**
 * The inline attempts the background admission leaves to quiet accounts: a fifth of the worker's
 * slots, rounded down. A quiet account's first deliveries are admitted at once by their own
 * fan-out, which attempts them on the spot when a slot is free; when a flood's admitted attempts
 * took every slot, they became delivery jobs instead and waited for a worker to fetch them (about
 * 25 ms at the median on a saturated 2-core machine). Rounded down, so that a
 * worker of fewer than five slots keeps them all for its admissions, which must always progress.
 *
 * @param capacity the worker's inline attempts at once (WORKER_CONCURRENCY)
 * @returns slots kept, in attempts
 */
export function quietReserve(capacity: number): number {
  return Math.floor(capacity / 5);
}

/**
 * Deliveries the background admission may take now: the free slots less the quiet accounts'
 * reserve, never below 0.
 *
 * @param room the worker's free inline slots now
 * @param capacity its inline attempts at once
 */
export function backgroundRoom(room: number, capacity: number): number {
  return Math.max(0, room - quietReserve(capacity));
}

/**
 * Whether a background admission is worth a script call: once a quarter of the slots (at least
 * one) are free for it, so that the call's fixed cost (about 20 Redis commands) is shared by
 * several deliveries, instead of one call per attempt that ends.
 *
 * @param room the worker's free inline slots now
 * @param capacity its inline attempts at once
 */
export function worthAdmitting(room: number, capacity: number): boolean {
  return backgroundRoom(room, capacity) >= Math.max(1, Math.ceil(capacity / 4));
}
