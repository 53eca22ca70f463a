/**
 * The event types a subscription chooses (`event_types`): exact types and wildcards (`*`,
 * `invoice.*`), as Stripe's `enabled_events` and Svix's `filterTypes`. Mirrored by the fan-out's SQL.
 */

/** Most entries in one subscription's `event_types`. */
export const maxSelectedEventTypes = 100;

const selectionEntry = /^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$/;

/** True when `pattern` (an exact type, `<prefix>.*` or `*`) selects `type`. */
export function matchesEventType(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

/** The types of `available` that any of `patterns` selects, in the order of `available`. */
export function selectedEventTypes(patterns: readonly string[], available: readonly string[]): string[] {
  return available.filter((type) => patterns.some((pattern) => matchesEventType(pattern, type)));
}

/**
 * The problem with `event_types`, or null; `available` is the kind's types (or all at the general endpoint).
 * @returns a sentence naming the first bad entry: malformed, unknown, selecting nothing, repeated, or the count
 */
export function eventTypeSelectionProblem(
  patterns: readonly string[],
  available: readonly string[],
): string | null {
  if (patterns.length === 0) return 'must name at least one event type, or `*`';
  if (patterns.length > maxSelectedEventTypes) return `names more than ${maxSelectedEventTypes} entries`;
  const seen = new Set<string>();
  for (const pattern of patterns) {
    if (seen.has(pattern)) return `names ${JSON.stringify(pattern)} twice`;
    seen.add(pattern);
    if (pattern.length > 101 || !selectionEntry.test(pattern)) {
      return `${JSON.stringify(pattern.slice(0, 101))} is neither an event type (<resource>.<action>) nor a wildcard (such as call.* or *)`;
    }
    if (!available.some((type) => matchesEventType(pattern, type))) {
      return pattern.endsWith('*')
        ? `${pattern} matches no event type this subscription can receive; GET /api/event-types lists them`
        : `${pattern} is not an event type this subscription can receive; GET /api/event-types lists them`;
    }
  }
  return null;
}

/** {@link matchesEventType} in SQL, over two SQL text expressions. */
export function patternSelectsTypeSql(pattern: string, type: string): string {
  return `(${pattern} = ${type} OR ${pattern} = '*' OR (right(${pattern}, 2) = '.*' AND starts_with(${type}, left(${pattern}, -1))))`;
}

/**
 * {@link typesReceivedBy} in SQL: subscription row `s` receives `type` of `kind` (SQL expressions)
 * when its kind matches (or it is general) and its `event_types` select it (all when empty).
 */
export function receivesEventTypeSql(s: string, type: string, kind: string): string {
  return `(${s}.kind IS NULL OR ${s}.kind = ${kind}) AND (cardinality(${s}.event_types) = 0 OR EXISTS (
    SELECT 1 FROM unnest(${s}.event_types) AS p(pattern) WHERE ${patternSelectsTypeSql('p.pattern', type)}))`;
}

/**
 * The types a subscription receives, in catalogue order: its kind's that `eventTypes` select (all when empty).
 * @param typesOfKind `Catalogue.typesOfKind`, so this module needs no catalogue
 */
export function typesReceivedBy(
  typesOfKind: (kind: string | null) => readonly string[],
  subscription: { kind: string | null; eventTypes: readonly string[] },
): string[] {
  const available = typesOfKind(subscription.kind);
  return subscription.eventTypes.length === 0
    ? [...available]
    : selectedEventTypes(subscription.eventTypes, available);
}
