/**
 * The backlog bound's pure rules: when a publish is refused at either bound, and past the
 * deliveries bound which accounts are refused first (`lib/backlog.ts`).
 */
import { describe, expect, it } from '@jest/globals';
import { backlogRefusal, fairShareRefusal } from '../src/lib/backlog.js';

describe('the backlog rule', () => {
  const backlog = (events: number, deliveries: number, accounts = 0, waitingOrParked = 0) => ({
    events,
    deliveries,
    accounts,
    waitingOrParked,
    fanOutWaitMs: 0,
  });

  it('refuses at either bound, names it, and never with a bound of 0', () => {
    const limits = { events: 10, deliveries: 100 };
    expect(backlogRefusal(backlog(9, 99), limits)).toBeNull();
    expect(backlogRefusal(backlog(10, 0), limits)).toMatch(/BACKLOG_MAX_EVENTS 10/);
    expect(backlogRefusal(backlog(0, 100), limits)).toMatch(/BACKLOG_MAX_DELIVERIES 100/);
    expect(backlogRefusal(backlog(1e9, 1e9), { events: 0, deliveries: 0 })).toBeNull();
  });

  it('past the deliveries bound, refuses the accounts with their share or more waiting, and every account past twice the bound', () => {
    const limits = { events: 0, deliveries: 100 };
    // 90 wait for their turn, over 3 accounts: a share is 30.
    const full = backlog(0, 110, 3, 90);
    expect(fairShareRefusal(full, limits, 80)).toMatch(/80 of them are this account's, over its share of 30/);
    expect(fairShareRefusal(full, limits, 30)).not.toBeNull();
    expect(fairShareRefusal(full, limits, 5)).toBeNull();
    expect(fairShareRefusal(full, limits, 0)).toBeNull();
    expect(fairShareRefusal(backlog(0, 200, 3, 90), limits, 0)).toMatch(/BACKLOG_MAX_DELIVERIES 100/);
    expect(fairShareRefusal(backlog(0, 99, 3, 90), limits, 80)).toBeNull();
    // Nothing waiting for a turn (all of it admitted): a share of one, so any waiting account is refused.
    expect(fairShareRefusal(backlog(0, 110, 0, 0), limits, 0)).toBeNull();
    expect(fairShareRefusal(backlog(0, 110, 0, 0), limits, 1)).not.toBeNull();
  });
});
