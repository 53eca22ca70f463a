/**
 * Delivery log ids, partitioned by day on UUIDs whose first 48 bits are unix ms (RFC 9562 §5.7):
 * deliveries and attempts share their event's. Statements bounding ids by these let PostgreSQL prune days.
 */

/** The lowest log id of the millisecond `at` (UTC): its 48-bit time, then zeros. */
export function firstIdAt(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * The narrowest `[low, high]` of log ids sharing the first 48 bits of one of `ids` (canonical
 * UUIDs, at least one): a batch's event range bounds its deliveries' and attempts' too, so
 * `id BETWEEN low AND high` prunes the other days at run time.
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
