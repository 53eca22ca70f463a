/**
 * The Redis keys the worker's account scheduler and parked deliveries keep beside BullMQ's, under a
 * shard's effective key prefix: the worker writes them, the API's backlog bound reads them.
 */

/**
 * The account scheduler's hash of every first delivery it holds (apps/worker's
 * scheduling/account-scheduler.ts), under the effective key prefix: its length is how many wait
 * for their account's turn, which the API's backlog bound reads too.
 */
export function schedulerEntriesKey(prefix: string): string {
  return `${prefix}:sched:entries`;
}

/**
 * The account scheduler's list of one account's first deliveries waiting for its turn, under the
 * effective key prefix of a shard: its length is what the account has waiting there, which the
 * API's backlog bound reads to refuse the accounts over their share first.
 */
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
 * One account's delivery jobs waiting in a shard's delayed set (a retry's backoff, a gate, a rate
 * limit, the host cap), under the shard's effective key prefix: a sorted set of job ids scored by
 * the time each is due (ms since the epoch). The members due in the future are what the account
 * has parked there; the API's backlog bound counts them with its waiting deliveries. Members past
 * their time are stale (the job ran, or was removed) and are dropped as the set is written.
 */
export function parkedDeliveriesKey(prefix: string, accountId: string): string {
  return `${prefix}:parked:${accountId}`;
}

/**
 * The accounts with delivery jobs parked in a shard's delayed set ({@link parkedDeliveriesKey}),
 * under the shard's effective key prefix: a sorted set of account ids scored by the time their
 * latest parked job is due (ms since the epoch). Those scored in the future have jobs parked.
 */
export function parkedAccountsKey(prefix: string): string {
  return `${prefix}:parked-accounts`;
}

/** The account scheduler's round-robin list of the accounts with deliveries waiting, under `prefix`. */
export function schedulerRingKey(prefix: string): string {
  return `${prefix}:sched:ring`;
}
