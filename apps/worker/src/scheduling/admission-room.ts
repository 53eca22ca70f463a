/** How many first deliveries the background admission may take for an inline worker, and when a call is worth it. */

/**
 * The inline slots the background admission leaves to quiet accounts, whose fan-out attempts them on
 * the spot: a fifth, rounded down (a worker under five slots keeps all for admissions, which must progress).
 * @param capacity the worker's inline attempts at once (WORKER_CONCURRENCY)
 */
export function quietReserve(capacity: number): number {
  return Math.floor(capacity / 5);
}

/** Deliveries the background admission may take now: `room` (free inline slots) less the reserve of `capacity`, ≥ 0. */
export function backgroundRoom(room: number, capacity: number): number {
  return Math.max(0, room - quietReserve(capacity));
}

/** Whether a background admission is worth its script call (~20 commands): a quarter of the slots (≥ 1) free for it. */
export function worthAdmitting(room: number, capacity: number): boolean {
  return backgroundRoom(room, capacity) >= Math.max(1, Math.ceil(capacity / 4));
}
