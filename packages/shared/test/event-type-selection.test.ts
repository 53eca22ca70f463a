import { describe, expect, it } from '@jest/globals';
import {
  eventTypeSelectionProblem,
  matchesEventType,
  selectedEventTypes,
  typesReceivedBy,
} from '../src/event-type-selection.js';

const available = ['call.started', 'call.completed', 'message.sent', 'subscription.disabled'];

describe('event type selection', () => {
  it('matches exact types, prefix wildcards and *', () => {
    expect(matchesEventType('call.started', 'call.started')).toBe(true);
    expect(matchesEventType('call.started', 'call.completed')).toBe(false);
    expect(matchesEventType('call.*', 'call.completed')).toBe(true);
    expect(matchesEventType('call.*', 'callback.started')).toBe(false);
    expect(matchesEventType('*', 'message.sent')).toBe(true);
    expect(selectedEventTypes(['call.*', 'message.sent'], available)).toEqual([
      'call.started',
      'call.completed',
      'message.sent',
    ]);
  });

  it('gives a subscription that chose nothing every type of its kind', () => {
    const typesOfKind = (kind: string | null) => (kind === 'calls' ? available.slice(0, 2) : available);
    expect(typesReceivedBy(typesOfKind, { kind: 'calls', eventTypes: [] })).toEqual(available.slice(0, 2));
    expect(typesReceivedBy(typesOfKind, { kind: null, eventTypes: ['message.*'] })).toEqual(['message.sent']);
  });

  it.each([
    [[], /at least one/],
    [['call.*', 'call.*'], /twice/],
    [['Call.Started'], /neither an event type/],
    [['call'], /neither an event type/],
    [['call.**'], /neither an event type/],
    [['invoice.paid'], /invoice.paid is not an event type/],
    [['invoice.*'], /invoice.\* matches no event type/],
    [Array.from({ length: 101 }, (_, i) => `t${i}.x`), /more than 100/],
  ])('refuses %j, saying why', (patterns, reason) => {
    expect(eventTypeSelectionProblem(patterns, available)).toMatch(reason);
  });

  it('accepts types and wildcards that select something', () => {
    expect(eventTypeSelectionProblem(['call.*', 'message.sent'], available)).toBeNull();
    expect(eventTypeSelectionProblem(['*'], available)).toBeNull();
  });
});
