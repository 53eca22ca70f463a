/**
 * Fair slots of a shared pool (the transformation threads): `capacity` in all, `perAccount` each,
 * freed slots going round robin over waiting accounts, so one's runs wait behind its own only. Past
 * `waitingPerAccount` or `maxWaiting` asks, refused at once.
 */

/** Gives a slot back; calling it again does nothing. */
export type ReleaseSlot = () => void;

/** Why an ask got no slot: a queue at its bound, or its signal fired while it waited. */
export type SlotRefusal = 'account-full' | 'full' | 'aborted';

/** The bounds of {@link createFairSlots}. */
export interface FairSlotBounds {
  capacity: number;
  perAccount: number;
  waitingPerAccount: number;
  maxWaiting: number;
}

/** Fair slots. */
export interface FairSlots {
  /** A slot for `accountId`: at once with room and nobody waiting, else in its turn. @returns the release, or why none */
  acquire(accountId: string, signal: AbortSignal): Promise<ReleaseSlot | SlotRefusal>;
  /** Slots held and asks waiting: in all, and for `accountId`. */
  load(accountId: string): { held: number; waiting: number; accountHeld: number; accountWaiting: number };
}

interface Account {
  held: number;
  waiting: Array<(release: ReleaseSlot) => void>;
}

/** Creates the slots. */
export function createFairSlots(bounds: FairSlotBounds): FairSlots {
  const accounts = new Map<string, Account>();
  /** Accounts with asks waiting, in the order of their next turn. */
  const turns: string[] = [];
  let held = 0;
  let waiting = 0;

  const forget = (accountId: string, account: Account) => {
    if (account.held === 0 && account.waiting.length === 0) accounts.delete(accountId);
  };

  const releaseFor = (accountId: string, account: Account): ReleaseSlot => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held -= 1;
      account.held -= 1;
      forget(accountId, account);
      grantWaiting();
    };
  };

  /** Gives free slots to the waiting asks, one account's turn at a time. */
  const grantWaiting = () => {
    let looked = 0;
    while (held < bounds.capacity && looked < turns.length) {
      const accountId = turns.shift()!;
      const account = accounts.get(accountId)!;
      if (account.held >= bounds.perAccount) {
        turns.push(accountId);
        looked += 1;
        continue;
      }
      looked = 0;
      const grant = account.waiting.shift()!;
      waiting -= 1;
      held += 1;
      account.held += 1;
      if (account.waiting.length > 0) turns.push(accountId);
      grant(releaseFor(accountId, account));
    }
  };

  return {
    acquire(accountId, signal) {
      if (signal.aborted) return Promise.resolve('aborted');
      let account = accounts.get(accountId);
      if (account === undefined) {
        account = { held: 0, waiting: [] };
        accounts.set(accountId, account);
      }
      if (held < bounds.capacity && account.held < bounds.perAccount && account.waiting.length === 0) {
        held += 1;
        account.held += 1;
        return Promise.resolve(releaseFor(accountId, account));
      }
      if (account.waiting.length >= bounds.waitingPerAccount) return Promise.resolve('account-full');
      if (waiting >= bounds.maxWaiting) return Promise.resolve('full');
      const own = account;
      return new Promise((resolve) => {
        const grant = (release: ReleaseSlot) => {
          signal.removeEventListener('abort', onAbort);
          resolve(release);
        };
        const onAbort = () => {
          own.waiting.splice(own.waiting.indexOf(grant), 1);
          waiting -= 1;
          if (own.waiting.length === 0) turns.splice(turns.indexOf(accountId), 1);
          forget(accountId, own);
          resolve('aborted');
        };
        signal.addEventListener('abort', onAbort, { once: true });
        if (own.waiting.length === 0) turns.push(accountId);
        own.waiting.push(grant);
        waiting += 1;
      });
    },
    load(accountId) {
      const account = accounts.get(accountId);
      return { held, waiting, accountHeld: account?.held ?? 0, accountWaiting: account?.waiting.length ?? 0 };
    },
  };
}
