/**
 * Unit tests of the delivery path's pure rules: the error class of a failed request, outcome of an
 * attempt, backoff with Retry-After,
 * waiting for a subscription's slot in place or parked, the job that follows an inline attempt,
 * the room of the account scheduler's background admission, and which runs ask for a turn.
 */
import { describe, expect, it } from '@jest/globals';
import { classifyError, type AttemptResult } from '../src/delivery/attempt.js';
import { parseRetryAfter, retryDelayMs } from '../src/delivery/backoff.js';
import { inSlotWaitRule, waitsInSlot } from '../src/delivery/in-slot-wait.js';
import { followUpJob } from '../src/delivery/inline.js';
import { decideOutcome } from '../src/delivery/outcome.js';
import { parkedUntil } from '../src/delivery/parked.js';
import { needsTurn } from '../src/delivery/processor.js';
import { entryValue, readEntry } from '../src/scheduling/admission-script.js';
import { backgroundRoom, worthAdmitting } from '../src/scheduling/admission-room.js';

const now = new Date('2026-11-21T12:00:00.000Z');
const policy = { maxAttempts: 5, backoffMs: 60_000 };

const result = (overrides: Partial<AttemptResult>): AttemptResult => ({
  startedAt: now,
  durationMs: 5,
  statusCode: 500,
  errorClass: 'http_status',
  errorMessage: 'HTTP 500',
  errorDetail: null,
  responseBody: '',
  retryAfterMs: null,
  ...overrides,
});

describe('classifyError', () => {
  const errno = (code: string, syscall: string) =>
    Object.assign(new Error(`${syscall} ${code}`), { code, syscall });

  it('reads a resolver failure as dns, on the error itself or on the cause that wraps it', () => {
    expect(classifyError(errno('ETIMEOUT', 'queryA'))).toBe('dns');
    expect(classifyError(new Error('wrapped', { cause: errno('ECONNREFUSED', 'queryAaaa') }))).toBe('dns');
    expect(classifyError(errno('ENOTFOUND', 'getaddrinfo'))).toBe('dns');
  });

  it("tells a refused connection from the callback from a DNS server's refusal", () => {
    expect(classifyError(errno('ECONNREFUSED', 'connect'))).toBe('connection_refused');
  });

  it('reads a reset, a timeout and a refused address by their marks', () => {
    expect(classifyError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(
      'connection_reset',
    );
    expect(classifyError(Object.assign(new Error('late'), { name: 'TimeoutError' }))).toBe('timeout');
    expect(
      classifyError(new Error('DNS lookup 10.0.0.1 is not allowed. Because, It is private IP address.')),
    ).toBe('blocked_address');
  });
});

describe('retryDelayMs', () => {
  it('doubles from the backoff after each failed attempt', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(60_000, n, null))).toEqual([
      60_000, 120_000, 240_000, 480_000,
    ]);
  });

  it('waits for a longer Retry-After, never for a shorter one, and at most an hour', () => {
    expect(retryDelayMs(1_000, 1, 3_000)).toBe(3_000);
    expect(retryDelayMs(60_000, 1, 3_000)).toBe(60_000);
    expect(retryDelayMs(1_000, 1, 86_400_000)).toBe(3_600_000);
    // The hour bounds what a callback can ask for, not the service's own schedule.
    expect(retryDelayMs(60_000, 8, 1_000)).toBe(60_000 * 2 ** 7);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
  });

  it('reads an HTTP-date, and a past one as no wait', () => {
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('ignores what is neither', () => {
    for (const value of [undefined, '', '-5', '1.5', 'soon', 'Friday'])
      expect(parseRetryAfter(value, now)).toBeNull();
  });
});

describe('decideOutcome', () => {
  it('confirms exactly HTTP 200', () => {
    expect(decideOutcome(result({ statusCode: 200, errorClass: null }), 0, policy, now)).toEqual({
      kind: 'succeeded',
    });
    expect(decideOutcome(result({ statusCode: 201 }), 0, policy, now).kind).toBe('retry');
  });

  it("confirms a broker's confirmation (no HTTP status, no error), and retries a refused publish", () => {
    expect(decideOutcome(result({ statusCode: null, errorClass: null }), 0, policy, now)).toEqual({
      kind: 'succeeded',
    });
    for (const errorClass of ['broker_refused', 'broker_unroutable', 'broker_unavailable'] as const)
      expect(decideOutcome(result({ statusCode: null, errorClass }), 0, policy, now).kind).toBe('retry');
  });

  it('schedules the next attempt with the backoff, stretched by Retry-After', () => {
    expect(decideOutcome(result({}), 1, policy, now)).toEqual({
      kind: 'retry',
      nextAttemptAt: new Date(now.getTime() + 120_000),
    });
    expect(decideOutcome(result({ statusCode: 503, retryAfterMs: 600_000 }), 0, policy, now)).toEqual({
      kind: 'retry',
      nextAttemptAt: new Date(now.getTime() + 600_000),
    });
  });

  it('gives up after the last attempt, and at once on a refused address', () => {
    expect(decideOutcome(result({}), 4, policy, now)).toEqual({
      kind: 'given_up',
      reason: 'attempts_exhausted',
    });
    expect(
      decideOutcome(result({ statusCode: null, errorClass: 'blocked_address' }), 0, policy, now),
    ).toEqual({
      kind: 'given_up',
      reason: 'blocked_address',
    });
  });
});

describe('waitsInSlot', () => {
  const rule = inSlotWaitRule(50);

  it('waits in place for a short turn, and parks once 50 ms in all would be passed', () => {
    expect(waitsInSlot(10, 0, 0, rule)).toBe(true);
    expect(waitsInSlot(10, 40, 0, rule)).toBe(true);
    expect(waitsInSlot(11, 40, 0, rule)).toBe(false);
  });

  it('parks a long turn (a subscription that began to hang) at once', () => {
    expect(waitsInSlot(2_000, 0, 0, rule)).toBe(false);
  });

  it('keeps half the worker slots for other jobs, at least one waiting in place', () => {
    expect(rule.maxWaiting).toBe(25);
    expect(waitsInSlot(10, 0, 24, rule)).toBe(true);
    expect(waitsInSlot(10, 0, 25, rule)).toBe(false);
    expect(inSlotWaitRule(1).maxWaiting).toBe(1);
  });
});

describe('followUpJob', () => {
  const candidate = { jobId: 'e.s', eventId: 'e', subscriptionId: 's', accountId: 'a', requestId: 'r-1' };
  const at = now.getTime();

  it('queues nothing after a confirmed, given-up or ended round', () => {
    expect(
      followUpJob(candidate, { kind: 'attempted', outcome: { kind: 'succeeded' }, failure: '' }, 5, at),
    ).toBeNull();
    expect(
      followUpJob(
        candidate,
        { kind: 'attempted', outcome: { kind: 'given_up', reason: 'attempts_exhausted' }, failure: '' },
        5,
        at,
      ),
    ).toBeNull();
    expect(followUpJob(candidate, { kind: 'ended', result: 'cancelled' }, 5, at)).toBeNull();
  });

  it('retries a failed attempt after its backoff, with one BullMQ attempt less and the inline one counted', () => {
    const job = followUpJob(
      candidate,
      {
        kind: 'attempted',
        outcome: { kind: 'retry', nextAttemptAt: new Date(at + 1_500) },
        failure: 'http_status',
      },
      5,
      at,
    );
    expect(job?.opts).toMatchObject({ jobId: 'e.s', attempts: 4, delay: 1_500 });
    expect(job?.data).toEqual({
      eventId: 'e',
      subscriptionId: 's',
      accountId: 'a',
      requestId: 'r-1',
      inlineAttempts: 1,
    });
  });

  it('parks a delivery that must wait its turn, with every attempt still ahead of it', () => {
    const job = followUpJob(candidate, { kind: 'wait', waitMs: 40 }, 5, at);
    expect(job?.opts).toMatchObject({ jobId: 'e.s', attempts: 5, delay: 40 });
    expect(job?.data.inlineAttempts).toBeUndefined();
  });

  it("keeps a backlogged account's delivery in the back lane, whether it waits or retries", () => {
    const backlogged = { ...candidate, priority: 1 };
    const parked = followUpJob(backlogged, { kind: 'wait', waitMs: 40 }, 5, at);
    const retry = followUpJob(
      backlogged,
      { kind: 'attempted', outcome: { kind: 'retry', nextAttemptAt: new Date(at + 10) }, failure: '' },
      5,
      at,
    );
    expect([parked?.opts.priority, retry?.opts.priority]).toEqual([1, 1]);
    expect(followUpJob(candidate, { kind: 'wait', waitMs: 40 }, 5, at)?.opts.priority).toBeUndefined();
    expect(parked?.data).toEqual({ eventId: 'e', subscriptionId: 's', accountId: 'a', requestId: 'r-1' });
  });
});

describe("the background admission's room", () => {
  it('keeps a fifth of the inline slots for quiet accounts', () => {
    expect(backgroundRoom(50, 50)).toBe(40);
    expect(backgroundRoom(10, 50)).toBe(0);
    expect(backgroundRoom(3, 50)).toBe(0);
  });

  it('keeps nothing back from a worker of fewer than five slots, so that admissions progress', () => {
    expect(backgroundRoom(4, 4)).toBe(4);
    expect(worthAdmitting(1, 1)).toBe(true);
  });

  it('admits once a quarter of the slots are free for it, not at every attempt that ends', () => {
    expect(worthAdmitting(10 + 12, 50)).toBe(false);
    expect(worthAdmitting(10 + 13, 50)).toBe(true);
    expect(worthAdmitting(8, 8)).toBe(true);
    expect(worthAdmitting(2, 8)).toBe(false);
    expect(worthAdmitting(3, 8)).toBe(true);
  });
});

describe('needsTurn', () => {
  it('sends retries and new rounds through the account scheduler, not a first round it admitted', () => {
    const first = { round: 0, inlineAttempts: 0, attemptsMade: 0 };
    expect(needsTurn(first)).toBe(false);
    expect(needsTurn({ ...first, attemptsMade: 1 })).toBe(true);
    expect(needsTurn({ ...first, inlineAttempts: 1 })).toBe(true);
    expect(needsTurn({ ...first, round: 2 })).toBe(true);
  });
});

describe('parkedUntil', () => {
  const at = now.getTime();
  it("counts a wait and a retry's backoff until they are due, and nothing else", () => {
    expect(parkedUntil({ kind: 'wait', waitMs: 500 }, at)).toBe(at + 500);
    const nextAttemptAt = new Date(at + 60_000);
    expect(
      parkedUntil({ kind: 'attempted', outcome: { kind: 'retry', nextAttemptAt }, failure: 'http_500' }, at),
    ).toBe(at + 60_000);
    // In its account's turn list, it is counted there already.
    expect(parkedUntil({ kind: 'wait', waitMs: 500, inTurnList: true }, at)).toBeNull();
    expect(parkedUntil({ kind: 'attempted', outcome: { kind: 'succeeded' }, failure: '' }, at)).toBeNull();
    expect(parkedUntil({ kind: 'ended', result: 'dropped' }, at)).toBeNull();
  });
});

describe("an account scheduler's entry", () => {
  it('gives back the account, the request id and the marks it was written with', () => {
    expect(readEntry(entryValue({ accountId: 'acct-a', requestId: 'r-1', created: true }))).toEqual({
      accountId: 'acct-a',
      requestId: 'r-1',
      created: true,
      held: false,
    });
    expect(readEntry(entryValue({ accountId: 'acct-b', held: true }))).toEqual({
      accountId: 'acct-b',
      created: false,
      held: true,
    });
    expect(readEntry(entryValue({ accountId: 'acct-c' }))).toEqual({
      accountId: 'acct-c',
      created: false,
      held: false,
    });
  });
});
