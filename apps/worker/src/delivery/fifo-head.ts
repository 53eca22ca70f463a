/**
 * The FIFO head rule, in one place: a FIFO subscription's head is its pending delivery with no
 * earlier pending delivery of the same subscription, earlier by event id (UUIDv7, so the order the
 * events were accepted in). `fifo.ts` explains what the head means for ordered delivery. Two
 * statements pick heads with the same order instead of this condition, as reading a long FIFO
 * backlog once beats testing it once per waiting delivery: `fifo.ts`'s `fifo-heads` (`DISTINCT ON
 * (subscription_id) ... ORDER BY event_id`) and `store.ts`'s `loadHead` (`status = 'pending' ORDER
 * BY event_id LIMIT 1`, and the same order for the event after the head); a change to the rule
 * changes all three.
 */

/**
 * The rule as an SQL condition on the delivery row `alias` (its `subscription_id` and `event_id`
 * columns): true when it is its subscription's head. `idBound`, when given, is an SQL expression
 * the earlier rows' ids are at most, so that PostgreSQL prunes the delivery log's day partitions
 * (every earlier delivery has an earlier id too).
 */
export function isFifoHeadSql(alias: string, idBound?: string): string {
  const bound = idBound === undefined ? '' : ` AND earlier.id <= ${idBound}`;
  return `NOT EXISTS (
    SELECT 1 FROM deliveries earlier
    WHERE earlier.subscription_id = ${alias}.subscription_id AND earlier.status = 'pending'
      AND earlier.event_id < ${alias}.event_id${bound})`;
}
