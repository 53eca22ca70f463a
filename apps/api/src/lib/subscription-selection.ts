/** What a subscription receives (`event_types`, `filter`) as the API checks and queries it; rules shared with the fan-out. */
import { Prisma } from '@webhooks/db';
import { eventFilterProblem, eventTypeSelectionProblem, type Catalogue } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/**
 * Checks `event_types` and `filter` as written (undefined: not written); `kind`'s types may be chosen (null: all).
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
 * The Prisma condition of `GET /api/webhooks?type=…`: `all` (general ones), a kind, or an event type
 * (its receivers, by kind or by a selecting type or wildcard).
 * @throws HttpProblem 400 naming `type` when it is none of these
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
