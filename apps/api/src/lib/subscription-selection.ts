/**
 * What a subscription receives, as the API checks and queries it: its chosen `event_types` (exact
 * types and wildcards) and its content `filter`. The rules themselves are @webhooks/shared's
 * (event-type-selection.ts, event-filter.ts), shared with the fan-out that applies them.
 */
import { Prisma } from '@webhooks/db';
import { eventFilterProblem, eventTypeSelectionProblem, type Catalogue } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/**
 * Checks a subscription's `event_types` and `filter` as written (undefined: not written).
 *
 * @param kind the subscription's kind: its types are the ones it may choose (null: every type)
 * @throws HttpProblem 400 naming `/event_types`, or the place inside `/filter`, with what is wrong
 */
export function checkSubscriptionSelection(
  catalogue: Catalogue,
  kind: string | null,
  eventTypes: readonly string[] | undefined,
  filter: Record<string, unknown> | null | undefined,
): void {
  if (eventTypes !== undefined) {
    const problem = eventTypeSelectionProblem(eventTypes, catalogue.typesOfKind(kind));
    if (problem !== null) {
      throw new HttpProblem(400, 'validation', `event_types ${problem}`, [
        { pointer: '/event_types', detail: problem },
      ]);
    }
  }
  if (filter !== undefined && filter !== null) {
    const problem = eventFilterProblem(filter);
    if (problem !== null) {
      const pointer = `/filter${problem.pointer}`;
      throw new HttpProblem(400, 'validation', `${pointer.slice(1)} ${problem.detail}`, [
        { pointer, detail: problem.detail },
      ]);
    }
  }
}

/** The stored form of a written `filter`: SQL NULL for none. */
export function storedFilter(
  filter: Record<string, unknown> | null,
): Prisma.InputJsonValue | typeof Prisma.DbNull {
  return filter === null ? Prisma.DbNull : (filter as Prisma.InputJsonValue);
}

/**
 * The Prisma condition of `GET /api/webhooks?type=…`: `all` the general subscriptions, a kind
 * the subscriptions of that kind, an event type the subscriptions that receive it (by their kind
 * when they chose nothing, or by a chosen type or wildcard that selects it).
 *
 * @throws HttpProblem 400 naming the `type` parameter when it is none of these
 */
export function receivesTypeCondition(catalogue: Catalogue, type: string): Prisma.SubscriptionWhereInput {
  if (type === 'all') return { kind: null };
  if (catalogue.isKind(type)) return { kind: type };
  const entry = catalogue.entry(type);
  if (entry === undefined) {
    throw new HttpProblem(400, 'validation', 'type parameter is neither an event type, a kind nor all', [
      {
        pointer: '/type',
        detail: 'is neither an event type, a kind nor all; GET /api/event-types lists them',
      },
    ]);
  }
  const segments = type.split('.');
  const selecting = [
    '*',
    type,
    ...segments.slice(1).map((_, i) => `${segments.slice(0, i + 1).join('.')}.*`),
  ];
  return {
    AND: [
      { OR: [{ kind: null }, { kind: entry.kind }] },
      { OR: [{ eventTypes: { isEmpty: true } }, { eventTypes: { hasSome: selecting } }] },
    ],
  };
}
