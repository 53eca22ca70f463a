/**
 * The FIFO head rule: a pending delivery with no earlier pending one (by UUIDv7 event id) of its
 * subscription. `fifo.ts`'s `fifo-heads` and `store.ts`'s `loadHead` pick heads by the same order
 * instead (cheaper on a long backlog): a change to the rule changes all three.
 */

/** The rule as SQL on delivery row `alias`; `idBound` bounds earlier rows' ids (SQL) so PostgreSQL prunes days. */
export function isFifoHeadSql(alias: string, idBound?: string): string {
  const bound = idBound === undefined ? '' : ` AND earlier.id <= ${idBound}`;
  return `NOT EXISTS (
    SELECT 1 FROM deliveries earlier
    WHERE earlier.subscription_id = ${alias}.subscription_id AND earlier.status = 'pending'
      AND earlier.event_id < ${alias}.event_id${bound})`;
}
