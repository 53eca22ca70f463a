/**
 * The payload's `timestamp` form (docs/api.md#what-a-callback-receives): ISO 8601 with fractional seconds
 * and no zone designator, as in the specification's sample. This service always writes UTC.
 *
 * @example formatPayloadTimestamp(new Date('2026-11-21T10:15:30.123Z')) === '2026-11-21T10:15:30.123'
 */
export function formatPayloadTimestamp(date: Date): string {
  return date.toISOString().slice(0, -1);
}

/** Reads a payload timestamp (UTC, no zone designator) back into a Date. */
export function parsePayloadTimestamp(timestamp: string): Date {
  return new Date(`${timestamp}Z`);
}
