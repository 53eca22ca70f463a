/**
 * The event catalogue (docs/event-catalogue.md), loaded from EVENT_CATALOGUE: each kind (one endpoint
 * `POST /api/webhooks/<kind>`), its event types (`<resource>.<action>`), their `data` and who may send them.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';

/** The kind of the service's own events. */
export const operationalKind = 'operational';

/** One event type of the catalogue. */
export interface EventTypeEntry {
  /** `<resource>.<action>`, such as `call.completed`. */
  type: string;
  kind: string;
  description: string;
  /** The JSON Schema (draft 2020-12) of `data`, or null: any object. */
  schema: Record<string, unknown> | null;
  /** Example `data`: what `GET /api/event-types` shows and a test event carries. */
  example: Record<string, unknown>;
  /** Still delivered and accepted; shown as deprecated so that subscribers move off it. */
  deprecated: boolean;
}

/** One kind with its event types, in file order. */
export interface EventKindEntry {
  kind: string;
  description: string;
  types: readonly EventTypeEntry[];
}

/** A `data` that its type's schema refuses: one JSON pointer (RFC 6901) under `/data` each. */
export interface DataError {
  pointer: string;
  detail: string;
}

/** The loaded catalogue: the file's kinds plus the service's operational kind. */
export interface Catalogue {
  /** The file it was loaded from, for messages. */
  readonly source: string;
  /** Every kind, in file order, the operational kind last. */
  readonly kinds: readonly EventKindEntry[];
  /** Every event type, in catalogue order. */
  readonly types: readonly string[];
  /** The entry of `type`, or undefined for a type outside the catalogue. */
  entry(type: string): EventTypeEntry | undefined;
  /** True when `kind` names a kind of the catalogue (operational included). */
  isKind(kind: string): boolean;
  /** True when `type` is an operational event type: emitted by the service, never by a publisher. */
  isOperationalType(type: string): boolean;
  /** The event types a subscription of `kind` may choose from: the kind's, or all when null. */
  typesOfKind(kind: string | null): readonly string[];
  /** The errors of `data` against `type`'s schema (compiled at load), at most `limit`; none when it matches. */
  checkData(type: string, data: unknown, limit?: number): DataError[];
}

/** The operational event the worker emits when it disables a subscription after failing deliveries. */
export const subscriptionDisabledType = 'subscription.disabled';

/** The operational event the worker emits when a subscription's circuit breaker opens. */
export const subscriptionFailingType = 'subscription.failing';

/** The operational event the worker emits when a subscription's circuit breaker closes again. */
export const subscriptionRecoveredType = 'subscription.recovered';

/** What every operational notice about a subscription carries (examples of the catalogue). */
const aboutSubscription = {
  subscription_id: '0193a5c4-0000-7000-8000-000000000000',
  resource_uri: '/api/webhooks/0193a5c4-0000-7000-8000-000000000000',
  callback_url: 'https://client.example/hooks',
};

/** The service's own kind, appended to every catalogue. */
const operational: EventKindEntry = {
  kind: operationalKind,
  description:
    'About your subscriptions, emitted by the service: subscription.failing when its circuit breaker opens (its deliveries wait), subscription.recovered when it closes, subscription.disabled when one is disabled after failing deliveries.',
  types: [
    {
      type: subscriptionDisabledType,
      kind: operationalKind,
      description: 'A subscription was disabled after failing deliveries.',
      schema: null,
      // The fields the worker sends (delivery/attempt-record.ts).
      example: { ...aboutSubscription, reason: 'consecutive_failures', failure_count: 20 },
      deprecated: false,
    },
    {
      type: subscriptionFailingType,
      kind: operationalKind,
      description:
        "A subscription's circuit breaker opened after failing attempts: its deliveries wait, using no attempts, until a probe attempt at retry_at is confirmed.",
      schema: null,
      // The fields the worker sends (delivery/breaker-notices.ts).
      example: {
        ...aboutSubscription,
        reason: 'consecutive_failures',
        failure_count: 10,
        window_attempts: 12,
        window_failures: 10,
        retry_at: '2026-12-04T12:00:30.000Z',
      },
      deprecated: false,
    },
    {
      type: subscriptionRecoveredType,
      kind: operationalKind,
      description:
        "A subscription's circuit breaker closed: an attempt was confirmed, and its waiting deliveries flow again.",
      schema: null,
      example: { ...aboutSubscription, failing_since: '2026-12-04T12:00:00.000Z' },
      deprecated: false,
    },
  ],
};

/** The event types the service itself emits, which a catalogue file may not declare. */
export const operationalTypes: readonly string[] = operational.types.map((t) => t.type);

/** Builds the catalogue from checked kinds and one validator per typed schema, plus the operational kind. */
export function createCatalogue(
  source: string,
  kinds: readonly EventKindEntry[],
  validators: ReadonlyMap<string, ValidateFunction>,
): Catalogue {
  const all = [...kinds, operational];
  const entries = new Map(all.flatMap((k) => k.types.map((t) => [t.type, t] as const)));
  const kindTypes = new Map(all.map((k) => [k.kind, k.types.map((t) => t.type)] as const));
  const types = [...entries.keys()];
  return {
    source,
    kinds: all,
    types,
    entry: (type) => entries.get(type),
    isKind: (kind) => kindTypes.has(kind),
    isOperationalType: (type) => entries.get(type)?.kind === operationalKind,
    typesOfKind: (kind) => (kind === null ? types : (kindTypes.get(kind) ?? [])),
    checkData(type, data, limit = 20) {
      const validate = validators.get(type);
      if (validate === undefined || validate(data)) return [];
      return (validate.errors ?? []).slice(0, limit).map((error) => {
        let pointer = `/data${error.instancePath}`;
        if (error.keyword === 'required') pointer += `/${String(error.params.missingProperty)}`;
        if (error.keyword === 'additionalProperties') {
          pointer += `/${String(error.params.additionalProperty)}`;
        }
        return { pointer, detail: error.message ?? 'does not match the schema' };
      });
    },
  };
}
