/**
 * The SDK clients of subscriptions that write with customer-owned credentials, kept per subscription
 * so an assumed role's credentials are reused. Bounded per account and in total, least recently used
 * first, and let go once unused for `idleMs`: a deleted subscription's clients go when it is no longer
 * written to. A miss costs new connections and, for a role, one AssumeRole; it never refuses a write.
 */
import type { AwsCredentials } from '@webhooks/shared';
import type { AwsClientSet } from './aws-clients.js';

/** How many client sets are kept, and for how long unused. */
export interface CustomerClientBounds {
  /** Sets one account keeps; past it, its own least recently used goes. */
  perAccount: number;
  /** Sets kept across accounts; past it, the least recently used goes. */
  total: number;
  /** How long an unused set is kept, in ms. */
  idleMs: number;
}

/** The defaults: 32 sets an account, 256 in all (each with at most 1,000 queue URLs), 10 minutes unused. */
export const customerClientBounds: CustomerClientBounds = { perAccount: 32, total: 256, idleMs: 600_000 };

interface Entry {
  accountId: string;
  /** The credentials the set was made for: changed credentials make a new set. */
  key: string;
  clients: AwsClientSet;
  usedAt: number;
}

/**
 * The cache: `make` builds a subscription's set, `letGo` destroys one that may still carry an attempt.
 * `get` returns the set of `subscriptionId` (of `accountId`) for `credentials`.
 */
export function createCustomerClients(
  make: (credentials: AwsCredentials, subscriptionId: string) => AwsClientSet,
  letGo: (clients: AwsClientSet) => void,
  bounds: CustomerClientBounds = customerClientBounds,
  now: () => number = Date.now,
) {
  // Insertion order is use order: a use moves its entry to the end.
  const entries = new Map<string, Entry>();
  const drop = (subscriptionId: string) => {
    const entry = entries.get(subscriptionId);
    if (entry === undefined) return;
    entries.delete(subscriptionId);
    letGo(entry.clients);
  };
  const oldestOf = (accountId?: string) =>
    [...entries].find(([, entry]) => accountId === undefined || entry.accountId === accountId)?.[0];

  return {
    get(accountId: string, subscriptionId: string, credentials: AwsCredentials): AwsClientSet {
      const at = now();
      for (const [id, entry] of entries) {
        if (at - entry.usedAt < bounds.idleMs) break;
        drop(id);
      }
      const key = JSON.stringify(credentials);
      const known = entries.get(subscriptionId);
      if (known !== undefined && known.key === key) {
        entries.delete(subscriptionId);
        entries.set(subscriptionId, { ...known, usedAt: at });
        return known.clients;
      }
      drop(subscriptionId);
      const clients = make(credentials, subscriptionId);
      entries.set(subscriptionId, { accountId, key, clients, usedAt: at });
      const ofAccount = [...entries.values()].filter((entry) => entry.accountId === accountId).length;
      if (ofAccount > bounds.perAccount) drop(oldestOf(accountId)!);
      if (entries.size > bounds.total) drop(oldestOf()!);
      return clients;
    },
    /** Destroys every set at once (the publisher closes). */
    close() {
      for (const { clients } of entries.values()) clients.destroy();
      entries.clear();
    },
  };
}
