/**
 * Recent publish demand per account in this process, which fair shedding divides: counts in the
 * current and previous bucket. A bucket closes on a request once {@link demandWindowMs} passed and it
 * counted {@link demandMinRequests}, so after a pause the last demand still weighs. Two buckets of memory.
 */

/** How long a counting bucket stays open at least, in ms, once it saw a request. */
export const demandWindowMs = 500;

/** How many requests a counting bucket holds at least before it closes. */
export const demandMinRequests = 20;

/**
 * Whether an account is over its fair share while the API sheds: `own` (≥ 1) at or above
 * `total / accounts`. Below an equal share passes; a lone flood does not. Max-min fairness on
 * request counts, as the host cap shares a host.
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
