/** The fan-out's content filters, compiled once per subscription and filter, and kept ({@link maxCachedFilters}). */
import type { Logger } from 'pino';
import {
  buildDeliveryPayload,
  compileEventFilter,
  FilterCostExceededError,
  passesEventFilter,
  type EventFilter,
  type EventJobData,
} from '@webhooks/shared';
import type { SubscriptionRow } from './delivery/store.js';

/** Most compiled filters kept; the oldest is dropped past it. */
export const maxCachedFilters = 10_000;

/** A fan-out statement row: a delivery created, or (with `filter`) one to check first, with its subscription. */
export interface FanOutTarget extends SubscriptionRow {
  event_id: string;
  filter: EventFilter | null;
  /** The delivery's id when this statement created its row, else null. */
  delivery_id: string | null;
  /** The event's data as stored, on one created row per event (the others null). */
  event_data: Record<string, unknown> | null;
  /**
   * Whether this statement created the row: only then may it be attempted inline (an existing one,
   * of a fan-out run again, may have a job in flight: it gets a job under its deterministic id).
   */
  created: boolean;
}

/** The cache; `matches` tells whether an event's payload for that subscription passes its filter. */
export function createFilterCache() {
  const testers = new Map<string, (payload: Record<string, unknown>) => boolean>();
  const testerOf = (subscriptionId: string, filter: EventFilter) => {
    const key = `${subscriptionId}\n${JSON.stringify(filter)}`;
    let tester = testers.get(key);
    if (tester === undefined) {
      tester = compileEventFilter(filter);
      if (testers.size >= maxCachedFilters) testers.delete(testers.keys().next().value!);
      testers.set(key, tester);
    }
    return tester;
  };
  return {
    /**
     * Whether `event`'s payload matches the subscription's filter; one sift cannot evaluate, or over
     * its budget of visits, matches nothing, with a warning naming the account.
     */
    matches(target: FanOutTarget, event: EventJobData, log: Logger): boolean {
      const payload = buildDeliveryPayload(event, { webhookId: target.webhook_id });
      // Compiled inside the test, so that a filter sift cannot compile matches nothing too.
      return passesEventFilter(
        (tested) => testerOf(target.subscription_id, target.filter!)(tested),
        payload as unknown as Record<string, unknown>,
        (error) =>
          log.warn(
            {
              err: error,
              accountId: event.accountId,
              subscriptionId: target.subscription_id,
              eventId: event.id,
            },
            error instanceof FilterCostExceededError
              ? 'content filter went over its evaluation budget; the event is not delivered to that subscription'
              : 'content filter could not be evaluated; the event is not delivered to that subscription',
          ),
      );
    },
  };
}
