/**
 * Ids of the delivery log, which is range-partitioned by day on UUIDs whose first 48 bits are a
 * unix time in ms (RFC 9562 section 5.7): events on their UUIDv7 ids, deliveries and attempts on
 * ids that share their event's first 48 bits (the `partitioned_delivery_log` migration). A
 * statement that bounds its ids by these, as parameters, lets PostgreSQL prune the days outside.
 */

/** The lowest log id of the millisecond `at` (UTC): its 48-bit time, then zeros. */
export function firstIdAt(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * The narrowest range of log ids, `[low, high]` as UUID strings, holding every id whose first 48
 * bits (its time, RFC 9562 section 5.7) are those of one of `ids`. An event's deliveries and their
 * attempts share its first 48 bits (`delivery_id()` of the partitioning migration), so the range of
 * a batch's event ids also bounds its deliveries' ids, and the reverse. A statement that adds
 * `id BETWEEN low AND high` as parameters lets PostgreSQL prune the days outside it when it runs,
 * instead of opening every day partition for every call.
 *
 * @param ids UUIDs in their canonical text form, at least one
 */
export function timeIdRange(ids: readonly string[]): [low: string, high: string] {
  let low = ids[0]!.slice(0, 13).toLowerCase();
  let high = low;
  for (const id of ids) {
    const prefix = id.slice(0, 13).toLowerCase();
    if (prefix < low) low = prefix;
    if (prefix > high) high = prefix;
  }
  return [`${low}-0000-0000-000000000000`, `${high}-ffff-ffff-ffffffffffff`];
}
