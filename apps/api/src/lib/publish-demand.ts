/**
 * Who is asking to publish lately in this API process: the demand fair shedding divides. Counts
 * of shed-able requests per account in the current bucket and the one before; a bucket closes at
 * the next request once {@link demandWindowMs} passed and it counted {@link demandMinRequests}.
 * Buckets close on requests seen, not wall time, so after a pause the last demand still weighs
 * the first requests. Memory is bounded by two buckets' accounts.
 */

/** How long a counting bucket stays open at least, in ms, once it saw a request. */
export const demandWindowMs = 500;

/** How many requests a counting bucket holds at least before it closes. */
export const demandMinRequests = 20;

/**
 * Whether an account with `own` of the recent requests is over its fair share of them while the
 * API sheds: at or above `total / accounts`, an equal share of what was asked. An account asking
 * less than an equal share is let through; a lone account asking everything is not, so a
 * saturated API still sheds one flood. Max-min fairness on request counts, as the worker's host
 * cap shares a host.
 *
 * @param own this account's recent requests, this one included (at least 1)
 * @param total every account's recent requests, this one included
 * @param accounts the accounts that made them (at least 1)
 */
export function overFairShare(own: number, total: number, accounts: number): boolean {
  return own * accounts >= total;
}

/** Recent demand per account, counted in this process. */
export interface PublishDemand {
  /** Counts one request of `accountId`; says whether the account is now over its fair share. */
  record(accountId: string, now?: number): boolean;
}

/** A demand counter whose buckets rotate every {@link demandWindowMs}; each request costs O(1). */
export function createPublishDemand(): PublishDemand {
  let current = new Map<string, number>();
  let previous = new Map<string, number>();
  let total = 0;
  let previousTotal = 0;
  /** Accounts in either bucket. */
  let accounts = 0;
  let bucketStart = Number.NEGATIVE_INFINITY;
  const rotate = (now: number) => {
    previous = current;
    previousTotal = total - previousTotal;
    total = previousTotal;
    current = new Map();
    accounts = previous.size;
    bucketStart = now;
  };
  return {
    record(accountId, now = Date.now()) {
      if (now - bucketStart >= demandWindowMs && total - previousTotal >= demandMinRequests) rotate(now);
      const before = current.get(accountId) ?? 0;
      if (before === 0 && !previous.has(accountId)) accounts += 1;
      current.set(accountId, before + 1);
      total += 1;
      return overFairShare(before + 1 + (previous.get(accountId) ?? 0), total, accounts);
    },
  };
}
