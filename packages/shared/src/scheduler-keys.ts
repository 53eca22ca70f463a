/** Keys the account scheduler and parked deliveries keep beside BullMQ's; the API's backlog bound reads them. */

/** The account scheduler's hash of every first delivery it holds: its length is how many wait for a turn. */
export function schedulerEntriesKey(prefix: string): string {
  return `${prefix}:sched:entries`;
}

/** One account's first deliveries waiting for its turn in a shard (the backlog bound reads its length). */
export function schedulerAccountListKey(prefix: string, accountId: string): string {
  return `${schedulerAccountListPrefix(prefix)}${accountId}`;
}

/** The prefix of {@link schedulerAccountListKey}, which the scheduler's script appends account ids to. */
export function schedulerAccountListPrefix(prefix: string): string {
  return `${prefix}:sched:q:`;
}

/** The account scheduler's sorted set of admitted deliveries not yet confirmed in BullMQ, under `prefix`. */
export function schedulerAdmittingKey(prefix: string): string {
  return `${prefix}:sched:admitting`;
}

/**
 * One account's delivery jobs in a shard's delayed set (backoff, gate, rate limit, host cap): job ids
 * scored by when due (ms). Future members are parked, counted by the backlog bound; past ones are
 * stale and dropped as the set is written.
 */
export function parkedDeliveriesKey(prefix: string, accountId: string): string {
  return `${prefix}:parked:${accountId}`;
}

/** Accounts with jobs parked in a shard ({@link parkedDeliveriesKey}), scored by their latest due time (ms). */
export function parkedAccountsKey(prefix: string): string {
  return `${prefix}:parked-accounts`;
}

/** The account scheduler's round-robin list of the accounts with deliveries waiting, under `prefix`. */
export function schedulerRingKey(prefix: string): string {
  return `${prefix}:sched:ring`;
}
