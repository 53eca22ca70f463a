import { describe, expect, it } from '@jest/globals';
import { createFairSlots, type ReleaseSlot } from '../src/fair-slots.js';

const open = () => new AbortController().signal;
const granted = async (ask: Promise<ReleaseSlot | string>): Promise<ReleaseSlot> => {
  const release = await ask;
  if (typeof release === 'string') throw new Error(`refused: ${release}`);
  return release;
};

describe('fair slots', () => {
  it('gives a freed slot to the next account in turn, not to the account that holds the most', async () => {
    const slots = createFairSlots({ capacity: 1, perAccount: 2, waitingPerAccount: 8, maxWaiting: 100 });
    const first = await granted(slots.acquire('hog', open()));
    const order: string[] = [];
    const ask = (account: string) =>
      granted(slots.acquire(account, open())).then((release) => {
        order.push(account);
        release();
      });
    const asks = [ask('hog'), ask('hog'), ask('hog'), ask('quiet')];
    first();
    await Promise.all(asks);
    expect(order).toEqual(['hog', 'quiet', 'hog', 'hog']);
  });

  it('holds an account to its share while others have room', async () => {
    const slots = createFairSlots({ capacity: 3, perAccount: 1, waitingPerAccount: 8, maxWaiting: 100 });
    const held = await granted(slots.acquire('a', open()));
    let second: ReleaseSlot | undefined;
    const waiting = granted(slots.acquire('a', open())).then((release) => (second = release));
    await granted(slots.acquire('b', open()));
    expect(slots.load('a')).toMatchObject({ accountHeld: 1, accountWaiting: 1 });
    expect(second).toBeUndefined();
    held();
    await waiting;
    expect(slots.load('a')).toMatchObject({ accountHeld: 1, accountWaiting: 0 });
  });

  it('refuses at once past an account’s queue and past the whole queue', async () => {
    const slots = createFairSlots({ capacity: 1, perAccount: 1, waitingPerAccount: 1, maxWaiting: 2 });
    await granted(slots.acquire('a', open()));
    void slots.acquire('a', open());
    expect(await slots.acquire('a', open())).toBe('account-full');
    void slots.acquire('b', open());
    expect(await slots.acquire('c', open())).toBe('full');
  });

  it('drops an ask whose signal fires, and gives its turn to the next', async () => {
    const slots = createFairSlots({ capacity: 1, perAccount: 1, waitingPerAccount: 4, maxWaiting: 10 });
    const held = await granted(slots.acquire('a', open()));
    const controller = new AbortController();
    const dropped = slots.acquire('b', controller.signal);
    const next = slots.acquire('c', open());
    controller.abort();
    expect(await dropped).toBe('aborted');
    held();
    expect(typeof (await next)).toBe('function');
    expect(slots.load('b')).toMatchObject({ held: 1, waiting: 0, accountHeld: 0 });
  });

  it('gives a slot back once, however often its release is called', async () => {
    const slots = createFairSlots({ capacity: 1, perAccount: 1, waitingPerAccount: 4, maxWaiting: 10 });
    const release = await granted(slots.acquire('a', open()));
    release();
    release();
    expect(slots.load('a')).toMatchObject({ held: 0, accountHeld: 0 });
  });
});
