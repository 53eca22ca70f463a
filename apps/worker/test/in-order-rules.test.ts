/**
 * The ordered hand-over's rules (`in-order.ts`, `fifo.ts`, `step.ts`): which head is handed over,
 * what follows its step (the next head, a job of its own, or nothing), which step skips its
 * subscription's gate, and when its lease is renewed.
 */
import { describe, expect, it } from '@jest/globals';
import { renewalDue } from '../src/delivery/lease.js';
import { afterHandedOver, handedOverRound } from '../src/delivery/in-order.js';
import { sentInOrder } from '../src/delivery/step.js';
import type { LoadedDelivery } from '../src/delivery/store.js';

const head = {
  eventId: '019a0000-0000-7000-8000-000000000001',
  subscriptionId: '019a0000-0000-7000-8000-0000000000aa',
  accountId: 'acct',
  round: 0,
};
const at = Date.parse('2026-11-28T05:00:00.000Z');

describe('handedOverRound', () => {
  it("runs a first round under its job's id, with the round's attempts, handing its own successor over", () => {
    expect(handedOverRound(head, 5, at)).toEqual({
      jobId: `${head.eventId}.${head.subscriptionId}`,
      eventId: head.eventId,
      subscriptionId: head.subscriptionId,
      accountId: 'acct',
      round: 0,
      enqueuedAt: at,
      maxAttempts: 5,
    });
  });

  it('leaves a later round (a manual retry, a recover) to its job', () => {
    expect(handedOverRound({ ...head, round: 1 }, 5, at)).toBeNull();
  });
});

describe('afterHandedOver', () => {
  it('goes on to the next head once a head is confirmed, given up or ended', () => {
    const next = { kind: 'next' };
    expect(
      afterHandedOver(
        head,
        { kind: 'attempted', outcome: { kind: 'succeeded' }, failure: '', nextInOrder: true },
        5,
        at,
      ),
    ).toEqual(next);
    expect(
      afterHandedOver(
        head,
        {
          kind: 'attempted',
          outcome: { kind: 'given_up', reason: 'attempts_exhausted' },
          failure: '',
          nextInOrder: true,
        },
        5,
        at,
      ),
    ).toEqual(next);
    expect(afterHandedOver(head, { kind: 'ended', result: 'expired', nextInOrder: true }, 5, at)).toEqual(
      next,
    );
  });

  it('stops when the step ended without handing over (its subscription was deleted)', () => {
    expect(afterHandedOver(head, { kind: 'ended', result: 'dropped' }, 5, at)).toEqual({ kind: 'stop' });
  });

  it('gives a failed head its retry job, the attempt just made counted, and stops', () => {
    const after = afterHandedOver(
      head,
      {
        kind: 'attempted',
        outcome: { kind: 'retry', nextAttemptAt: new Date(at + 2_000) },
        failure: 'http_status',
      },
      5,
      at,
    );
    expect(after).toMatchObject({
      kind: 'job',
      job: {
        data: {
          eventId: head.eventId,
          subscriptionId: head.subscriptionId,
          accountId: 'acct',
          inlineAttempts: 1,
        },
        opts: { jobId: `${head.eventId}.${head.subscriptionId}`, attempts: 4, delay: 2_000 },
      },
    });
  });

  it('gives a waiting head (its claim held, an earlier fan-out, its host cap) a delayed job, and stops', () => {
    const after = afterHandedOver(head, { kind: 'wait', waitMs: 1_000 }, 5, at);
    expect(after).toMatchObject({
      kind: 'job',
      job: { opts: { jobId: `${head.eventId}.${head.subscriptionId}`, attempts: 5, delay: 1_000 } },
    });
  });
});

describe('sentInOrder', () => {
  const loaded = (ordering: 'none' | 'fifo') => ({ subscription: { ordering } }) as unknown as LoadedDelivery;
  const round = handedOverRound(head, 5, at)!;

  it("skips the gate for a FIFO head its hand-over read and sends: its subscription's one attempt", () => {
    expect(sentInOrder({ ...round, loaded: loaded('fifo') })).toBe(true);
  });

  it('asks it for a job that may hand over but was not read by the hand-over, and for any unordered delivery', () => {
    expect(sentInOrder(round)).toBe(false);
    expect(sentInOrder({ ...round, loaded: loaded('none') })).toBe(false);
  });
});

describe('renewalDue', () => {
  it('renews a hand-over lease once a third of it has passed, not at every head', () => {
    expect(renewalDue(at, at + 4_999, 15_000)).toBe(false);
    expect(renewalDue(at, at + 5_000, 15_000)).toBe(true);
  });
});
