/**
 * When a delivery stops waiting: a round not sent within DELIVERY_MAX_AGE of its start,
 * whatever held it back (an outage, a throttled or paced callback), is given up as `expired`.
 */

/** When the event was accepted, in ms since the epoch: its id is a UUIDv7 (RFC 9562 section 5.7), whose first 48 bits are that time. */
export function eventAcceptedAt(eventId: string): number {
  return Number.parseInt(eventId.replaceAll('-', '').slice(0, 12), 16);
}

/** When the job's round started (ms since the epoch): the event's acceptance for round 0, else the job's creation. */
export function roundStartedAt(eventId: string, round: number, jobCreatedAt: number): number {
  return round === 0 ? eventAcceptedAt(eventId) : jobCreatedAt;
}

/** True when a round that started at `startedAt` (ms) is older than `maxAgeMs` at `now` (ms). */
export function isExpired(startedAt: number, now: number, maxAgeMs: number): boolean {
  return now - startedAt > maxAgeMs;
}
