/**
 * The event types a subscription chooses (`event_types`): exact types and wildcards, as Stripe's
 * `enabled_events` and Svix's `filterTypes` take them. `*` is every type the subscription may
 * receive; `invoice.*` every type whose name starts with `invoice.`. Pure rules, used by the API
 * when a subscription is written and mirrored by the fan-out's SQL (`receivesEventTypeSql`).
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
 * The problem with a subscription's `event_types`, or null when it can be stored.
 *
 * @param available the types the subscription may choose from: its kind's, or the whole
 *   catalogue's at the general endpoint
 * @returns a sentence naming the first bad entry: not a type or wildcard, unknown, a wildcard
 *   that selects nothing, a duplicate, or too many or none
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

/**
 * The SQL condition that the pattern `pattern` selects the event type `type` (both SQL text
 * expressions): {@link matchesEventType} in SQL.
 */
export function patternSelectsTypeSql(pattern: string, type: string): string {
  return `(${pattern} = ${type} OR ${pattern} = '*' OR (right(${pattern}, 2) = '.*' AND starts_with(${type}, left(${pattern}, -1))))`;
}

/**
 * The SQL condition that the subscription row aliased `s` receives the event type `type` of kind
 * `kind` (SQL expressions, such as `$1::text`): its kind's (or any kind when general), and among
 * them the ones its `event_types` select (all when empty). The same rule as
 * {@link typesReceivedBy}, for the fan-out's statements.
 */
export function receivesEventTypeSql(s: string, type: string, kind: string): string {
  return `(${s}.kind IS NULL OR ${s}.kind = ${kind}) AND (cardinality(${s}.event_types) = 0 OR EXISTS (
    SELECT 1 FROM unnest(${s}.event_types) AS p(pattern) WHERE ${patternSelectsTypeSql('p.pattern', type)}))`;
}

/**
 * The event types a subscription receives, in catalogue order: those its `eventTypes` select
 * among its kind's (all of them when it chose none, stored as an empty list).
 *
 * @param typesOfKind `Catalogue.typesOfKind`, so that this module stays free of the catalogue
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
