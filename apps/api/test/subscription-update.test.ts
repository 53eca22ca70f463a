import { describe, expect, it } from '@jest/globals';
import { subscriptionChange } from '../src/lib/subscription-update.js';
import { HttpProblem } from '../src/lib/problem.js';

const active = { status: 'active', callbackUrl: 'https://a.example/hooks', ordering: 'none' } as const;
const pending = { ...active, status: 'pending' } as const;

describe('what PUT /api/webhooks/{id} changes', () => {
  it('writes only the fields sent: Prisma keeps every other column', () => {
    const { data, moved, leavesFifo } = subscriptionChange({ webhookId: 'crm', rateLimit: 5 }, active, false);
    expect(data).toStrictEqual({ webhookId: 'crm', rateLimit: 5 });
    expect({ moved, leavesFifo }).toEqual({ moved: false, leavesFifo: false });
  });

  it('writes a null sent to clear a field', () => {
    const { data } = subscriptionChange(
      { webhookId: null, transformation: null, rateLimit: undefined },
      active,
      false,
    );
    expect(data).toStrictEqual({ webhookId: null, transformation: null });
  });

  it('makes a moved callback pending under challenges, whatever status was asked', () => {
    const change = subscriptionChange(
      { callbackUrl: 'https://b.example/hooks', toBroker: false, status: 'disabled' },
      active,
      true,
    );
    expect(change.moved).toBe(true);
    expect(change.data.status).toBe('pending');
  });

  it('does not ask for a challenge when challenges are off, or the URL is the same', () => {
    const moved = { callbackUrl: 'https://b.example/hooks', toBroker: false };
    expect(subscriptionChange(moved, active, false).moved).toBe(false);
    expect(subscriptionChange({ ...moved, callbackUrl: active.callbackUrl }, active, true).moved).toBe(false);
  });

  it('activates a pending callback that becomes a broker destination, which answers no challenge', () => {
    const change = subscriptionChange({ callbackUrl: 'rabbitmq://main/x', toBroker: true }, pending, true);
    expect(change.data.status).toBe('active');
    expect(change.moved).toBe(false);
  });

  it('refuses any status change while the callback has not answered its challenge (409)', () => {
    for (const status of ['active', 'disabled'] as const) {
      expect(() => subscriptionChange({ status }, pending, true)).toThrow(HttpProblem);
    }
  });

  it('resets the failure count when re-activated, and only then', () => {
    expect(subscriptionChange({ status: 'active' }, active, false).data.consecutiveFailures).toBe(0);
    expect(
      subscriptionChange({ status: 'disabled' }, active, false).data.consecutiveFailures,
    ).toBeUndefined();
  });

  it('releases the waiting deliveries when FIFO ordering is left', () => {
    const fifo = { ...active, ordering: 'fifo' } as const;
    expect(subscriptionChange({ ordering: 'none' }, fifo, false).leavesFifo).toBe(true);
    expect(subscriptionChange({ ordering: 'fifo' }, fifo, false).leavesFifo).toBe(false);
    expect(subscriptionChange({ ordering: 'none' }, active, false).leavesFifo).toBe(false);
  });
});
