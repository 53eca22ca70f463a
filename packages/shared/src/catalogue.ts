/**
 * The event catalogue: every kind of event the service delivers and the event types of each.
 *
 * Event types are written `<resource>.<action>` (specification section 6.2). Each kind gets its own
 * subscription endpoint, `POST /api/webhooks/<kind>` (specification section 4, note 1), and a
 * subscription made there receives only that kind's types. Adding a kind is one entry here.
 *
 * `operational` events are about the service itself: the service emits them, and
 * publishers may not.
 */
export const eventCatalogue = {
  calls: {
    description: 'Telephone calls: started, completed or failed.',
    types: ['call.started', 'call.completed', 'call.failed'],
  },
  messages: {
    description: 'Text messages: sent, received or failed.',
    types: ['message.sent', 'message.received', 'message.failed'],
  },
  operational: {
    description:
      'About your subscriptions, emitted by the service: subscription.disabled when one is disabled after failing deliveries.',
    types: ['subscription.disabled'],
  },
} as const satisfies Record<string, { description: string; types: readonly string[] }>;

/**
 * Example `data` of every event type: what the catalogue shows (`GET /api/event-types`) and what a
 * test event carries (`POST /api/webhooks/{id}/test-events`). `subscription.disabled` has the
 * fields the worker sends (delivery/store.ts).
 */
export const exampleEventData: Record<EventType, Record<string, unknown>> = {
  'call.started': {
    call_id: 'call_0193a5c2e7d1',
    from: '+14155550100',
    to: '+14155550199',
    direction: 'inbound',
  },
  'call.completed': {
    call_id: 'call_0193a5c2e7d1',
    from: '+14155550100',
    to: '+14155550199',
    direction: 'inbound',
    duration_seconds: 184,
  },
  'call.failed': {
    call_id: 'call_0193a5c2e7d1',
    from: '+14155550100',
    to: '+14155550199',
    direction: 'outbound',
    reason: 'busy',
  },
  'message.sent': {
    message_id: 'msg_0193a5c31b2f',
    from: '+14155550100',
    to: '+14155550199',
    text: 'Your appointment is confirmed for 3 pm.',
  },
  'message.received': {
    message_id: 'msg_0193a5c31b30',
    from: '+14155550199',
    to: '+14155550100',
    text: 'Thanks, see you then.',
  },
  'message.failed': {
    message_id: 'msg_0193a5c31b2f',
    from: '+14155550100',
    to: '+14155550199',
    reason: 'unreachable',
  },
  'subscription.disabled': {
    subscription_id: '0193a5c4-0000-7000-8000-000000000000',
    resource_uri: '/api/webhooks/0193a5c4-0000-7000-8000-000000000000',
    callback_url: 'https://client.example/hooks',
    reason: 'consecutive_failures',
    failure_count: 20,
  },
};

/** A kind of event, such as `calls`. */
export type EventKind = keyof typeof eventCatalogue;

/** An event type of the catalogue, such as `call.completed`. */
export type EventType = (typeof eventCatalogue)[EventKind]['types'][number];

/** Every kind, in catalogue order. */
export const eventKinds = Object.keys(eventCatalogue) as EventKind[];

/** Every event type, in catalogue order. */
export const eventTypes: readonly EventType[] = eventKinds.flatMap((kind) => eventCatalogue[kind].types);

const kindByType = new Map<string, EventKind>(
  eventKinds.flatMap((kind) => eventCatalogue[kind].types.map((type) => [type, kind] as const)),
);

/** True when `value` names a kind of the catalogue. */
export function isEventKind(value: string): value is EventKind {
  return Object.hasOwn(eventCatalogue, value);
}

/** True when `value` is an event type of the catalogue. */
export function isEventType(value: string): value is EventType {
  return kindByType.has(value);
}

/** True when `type` is an operational event type: emitted by the service, never by a publisher. */
export function isOperationalType(type: string): boolean {
  return kindByType.get(type) === 'operational';
}

/** The kind an event type belongs to, or undefined for a type outside the catalogue. */
export function kindOfType(type: string): EventKind | undefined {
  return kindByType.get(type);
}

/**
 * The event types a subscription receives: its kind's types, or every type when `kind` is null
 * (a subscription made at the general endpoint `POST /api/webhooks`).
 */
export function typesReceivedBy(kind: string | null): readonly string[] {
  return kind !== null && isEventKind(kind) ? eventCatalogue[kind].types : eventTypes;
}
